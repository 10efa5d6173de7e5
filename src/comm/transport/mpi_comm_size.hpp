// mpi_comm_size.hpp — a communicator's rank and size as values, with the MPI calls checked: what
// every backend asks of the communicator it is built on (its Backend(rank, size) base).
#pragma once

#include <mpi.h>

#include "comm/transport/mpi_check.hpp"

namespace microddp::comm {

inline int mpi_comm_rank(MPI_Comm comm) {
  int r = 0;
  MDDP_MPI_CHECK(MPI_Comm_rank(comm, &r));
  return r;
}

inline int mpi_comm_size(MPI_Comm comm) {
  int n = 0;
  MDDP_MPI_CHECK(MPI_Comm_size(comm, &n));
  return n;
}

}  // namespace microddp::comm
