// lab_bench.hpp — the seam of lab 12 (docs/labs/12-benchmark): the student's measure_all_reduce
// (lab_api.hpp) run on a real backend, with the program's work around it. `microddp lab-bench`
// (app/lab_bench_command.cpp) prints and fits the rows; the grader runs it once on the ring backend
// to prove the seam.
//   the clock        core::now_ns() (steady), as seconds on this rank
//   barrier          MPI_Barrier on the world, watched (a stuck rank ends the job)
//   max_over_ranks   MPI_Allreduce(MAX) of doubles on the world, watched
//   all_reduce(b)    one blocking out-of-place fp32 sum on the communicator under test, host buffers,
//                    of exactly the size being measured (another size is a UsageError: the row
//                    would be labelled with a size that was not timed). Out of place with a constant
//                    input, so repetitions do not grow the values: every call's result is the same
// Around each size the program fills the input with the integer inputs of
// comm/collective_reference.hpp (what `bench collectives` uses), poisons the output, and after the
// student's function checks the last result exactly (#wrong), counts the all-reduces it made
// (warmup + reps·batch expected) and checks that every rank returned the same time.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/runtime/mpi_runtime.hpp"
#include "labs/lab_api.hpp"

namespace microddp::labs {

struct LabBenchRow {
  std::int64_t bytes = 0, count = 0;  // the size measured: count floats
  LabBenchResult result;              // what measure_all_reduce returned (rank 0's)
  std::int64_t wrong = 0;             // wrong elements of the last all-reduce's result, over all ranks
  std::int64_t calls = 0;             // all-reduces measure_all_reduce made on this rank
  std::int64_t barriers = 0;          // and barriers
  bool ranks_agree = true;            // every rank returned rank 0's time
};

// The sizes rounded down to whole floats (>= 1), each measured once with measure_all_reduce on
// `comm` in the order given. Collective over every rank of `mpi`; `comm` is a host backend.
std::vector<LabBenchRow> run_lab_bench(comm::Communicator& comm, const comm::MpiRuntime& mpi,
                                       const std::vector<std::int64_t>& sizes, const LabBenchSettings& settings);

}  // namespace microddp::labs
