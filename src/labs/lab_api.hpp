// lab_api.hpp — the functions the course's labs ask for (docs/labs/README.md), and what their code
// may use. A lab's starter file (docs/labs/NN-name/*.cpp) defines one of these functions; the
// program calls it through a seam (lab_backend.hpp: `--comm lab-naive`, `--comm lab-ring`), and the
// lab's grader (tests/labs) checks it. Reference solutions: tests/labs/solutions (read them after).
#pragma once

#include <cstdint>
#include <string_view>

#include "labs/lab_comm.hpp"

namespace microddp::labs {

// Lab 02: sum `data` (count floats on every rank) over all ranks, in place, by gathering every
// rank's buffer on rank 0, adding, and sending the sum back to every rank.
void naive_all_reduce(LabComm& comm, float* data, std::int64_t count);

// Lab 03: the same sum with the ring algorithm (reduce-scatter, then all-gather, around a ring).
void ring_all_reduce(LabComm& comm, float* data, std::int64_t count);

// What an untouched starter calls: throws a usage error "lab <lab> is not done yet: write
// <function> in <file>" (the program and the grader print it).
[[noreturn]] void lab_todo(std::string_view lab, std::string_view function, std::string_view file);

}  // namespace microddp::labs
