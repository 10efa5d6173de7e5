// mpi_check.hpp — MDDP_MPI_CHECK(call): throws core::Error with MPI's error string, the call and
// file:line when an MPI function does not return MPI_SUCCESS (communicators use MPI_ERRORS_RETURN
// so errors reach us instead of aborting inside the library).
#pragma once

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <string>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/reduce_op.hpp"

namespace microddp::comm {

std::string mpi_error_string(int code);

// Narrow a 64-bit count to MPI's int; callers chunk first, so overflow here is a bug.
inline int to_mpi_int(std::int64_t n) {
  MDDP_CHECK(n >= 0 && n <= INT_MAX, "count " << n << " does not fit MPI's int (chunking missing)");
  return static_cast<int>(n);
}

MPI_Datatype mpi_datatype(core::DType t);
MPI_Op mpi_op(core::ReduceOp op);
// The op for `dtype`: 16-bit floats (F16, BF16: MPI_UINT16_T data) need their own (wire16_mpi_op.hpp).
MPI_Op mpi_op(core::ReduceOp op, core::DType dtype);

}  // namespace microddp::comm

#define MDDP_MPI_CHECK(call)                                                                                           \
  do {                                                                                                                 \
    const int mddp_mpi_rc_ = (call);                                                                                   \
    if (mddp_mpi_rc_ != MPI_SUCCESS) {                                                                                 \
      ::microddp::core::throw_error("MPI error: " + ::microddp::comm::mpi_error_string(mddp_mpi_rc_), #call, __FILE__, \
                                    __LINE__);                                                                         \
    }                                                                                                                  \
  } while (0)
