// wire16_mpi_op.hpp — MPI reduction operators for the 16-bit wire formats (gradient compression).
//
// MPI has no fp16/bf16 datatypes in the MPI-3 standard our libraries implement, so 16-bit data
// travels as MPI_UINT16_T and is combined by a user-defined MPI_Op: each application decodes both
// operands (exact), combines them in fp32 and rounds the result once back to 16 bits
// (kernels::wire16_reduce_pair), so a value is rounded once per addition, n - 1 times for n ranks
// whatever algorithm the MPI library picks (docs/compression.md). The operators are commutative
// (fp32 addition of two values is), created on first use after MPI_Init and kept until exit.
#pragma once

#include <mpi.h>

#include "core/dtype.hpp"
#include "core/reduce_op.hpp"

namespace microddp::comm {

// The MPI_Op combining `dtype` (F16 or BF16) values with `op` (Sum, Max or Min).
MPI_Op wire16_mpi_op(core::DType dtype, core::ReduceOp op);

}  // namespace microddp::comm
