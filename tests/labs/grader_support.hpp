// grader_support.hpp — what every MPI grader of the course's labs shares: MPI up and down around
// the grading, its title and PASS line from rank 0, and how the ranks agree on a verdict. Each
// rank's failure (or "") is printed in rank order, then every rank learns whether any rank failed,
// so one rank's failure never leaves the others waiting in a collective of the next check.
// (grader_training.hpp adds what the graders that run a lab inside the trainer share.)
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "comm/runtime/mpi_runtime.hpp"
#include "labs/lab_comm.hpp"

namespace microddp::labs::grading {

// Collective over MPI_COMM_WORLD. Prints "FAIL rank r: <failure>" (with `part`: "FAIL rank r,
// <part>: <failure>") for each failing rank, or, with same_everywhere, only rank 0's as "FAIL:
// <failure>" (a check every rank computes identically, or one only rank 0 runs); true when any rank
// failed.
inline bool any_failed(const std::string& failure, bool same_everywhere = false, const char* part = nullptr) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int bad = failure.empty() ? 0 : 1;
  for (int p = 0; p < size; ++p) {
    if (p == rank && bad && (!same_everywhere || rank == 0)) {
      if (same_everywhere) {
        std::printf("FAIL: %s\n", failure.c_str());
      } else if (part != nullptr) {
        std::printf("FAIL rank %d, %s: %s\n", rank, part, failure.c_str());
      } else {
        std::printf("FAIL rank %d: %s\n", rank, failure.c_str());
      }
    }
    std::fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any != 0;
}

// Runs `checks` (callables returning this rank's failure or "") in order and stops at the first
// that failed on some rank; true when every check passed on every rank.
template <class Checks>
bool all_passed(const Checks& checks) {
  for (const auto& check : checks) {
    if (any_failed(check())) return false;
  }
  return true;
}

// Runs one part, turning an exception (the starter's "not done yet", a rule the seam enforces)
// into this rank's failure.
template <class F>
std::string guarded(F&& part) {
  try {
    return std::forward<F>(part)();
  } catch (const std::exception& e) {
    return e.what();
  }
}

// printf on rank 0, flushed (the grader's title and its PASS line).
template <class... Args>
void root_says(const char* format, Args... args) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  std::printf(format, args...);
  std::fflush(stdout);
}

// "grading lab <lab> on <n> rank(s)<note>" on rank 0: the first line of every MPI grader.
inline void say_grading(const char* lab, int ranks, const char* note = "") {
  root_says("grading lab %s on %d rank(s)%s\n", lab, ranks, note);
}

// Distance in units in the last place (adjacent floats: 1), for the hints.
inline std::int64_t ulps(float a, float b) {
  std::int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if ((ia < 0) != (ib < 0)) return a == b ? 0 : INT64_MAX;
  return std::llabs(static_cast<std::int64_t>(ia) - ib);
}

// A grader's main(): MPI up (comm::MpiRuntime) for `grade(mpi)`, which returns true when the lab
// passed on every rank (the ranks agree through any_failed); exit code 0 or 1. An exception that
// escapes `grade` ends the job: "FAIL: <what>" and every rank aborts (no rank left waiting).
template <class Grade>
int run_grader(int argc, char** argv, Grade&& grade) {
  try {
    comm::MpiRuntime mpi(&argc, &argv);
    return grade(mpi) ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    std::fflush(stdout);
    comm::MpiRuntime::abort_all(1);
  }
}

// main() of the graders of the labs over LabComm (02, 03, 07): `make_cases(comm)` returns the checks
// (callables returning this rank's failure or ""); they run in order until one fails on some rank.
// PASS: "lab <lab>, <number of cases> <what>, every element exact on every rank".
template <class MakeCases>
int run_lab_comm_grader(int argc, char** argv, const char* lab, const char* what, MakeCases&& make_cases) {
  return run_grader(argc, argv, [&](const comm::MpiRuntime&) {
    LabComm comm(MPI_COMM_WORLD);
    say_grading(lab, comm.size(), " (a hang here: some send has no matching receive)");
    const auto cases = make_cases(comm);
    if (!all_passed(cases)) return false;
    root_says("PASS: lab %s, %zu %s, every element exact on every rank\n", lab, cases.size(), what);
    return true;
  });
}

}  // namespace microddp::labs::grading
