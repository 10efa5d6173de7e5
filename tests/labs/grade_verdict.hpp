// grade_verdict.hpp — how the graders of labs 05 and 06 report: each rank's failure (or "") is
// printed in rank order, then every rank learns whether any rank failed, so one rank's failure
// never leaves the others waiting in a collective of the next check.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>

namespace microddp::labs::grading {

// Collective over MPI_COMM_WORLD. Prints "FAIL rank r: <failure>" for each failing rank (or, with
// same_everywhere, only rank 0's: a check every rank computes identically); true when any rank failed.
inline bool any_failed(const std::string& failure, bool same_everywhere = false) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int bad = failure.empty() ? 0 : 1;
  for (int p = 0; p < size; ++p) {
    if (p == rank && bad && (!same_everywhere || rank == 0)) {
      if (same_everywhere) {
        std::printf("FAIL: %s\n", failure.c_str());
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

}  // namespace microddp::labs::grading
