// wire16_mpi_op.cpp — the user-defined MPI_Ops of the 16-bit wire formats.
#include "comm/transport/wire16_mpi_op.hpp"

#include <cstdint>
#include <mutex>

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "kernels/cpu/f16_arrays.hpp"
#include "kernels/elementwise.hpp"

namespace microddp::comm {

namespace {

template <kernels::Wire16 F, core::ReduceOp Op>
void combine(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  if constexpr (F == kernels::Wire16::F16 && Op == core::ReduceOp::Sum) {
    kernels::f16_sum_array(b, a, b, *len);  // F16C where the processor has it; bit-identical
  } else {
    for (int i = 0; i < *len; ++i) b[i] = kernels::wire16_reduce_pair(F, Op, a[i], b[i]);
  }
}

struct Ops {
  MPI_Op op[2][3] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}, {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};
};

int op_index(core::ReduceOp op) {
  switch (op) {
    case core::ReduceOp::Sum:
      return 0;
    case core::ReduceOp::Max:
      return 1;
    case core::ReduceOp::Min:
      return 2;
    case core::ReduceOp::Mean:
      break;
  }
  MDDP_CHECK(false, "ReduceOp::Mean has no 16-bit MPI op");
  return 0;
}

}  // namespace

MPI_Op wire16_mpi_op(core::DType dtype, core::ReduceOp op) {
  MDDP_CHECK(dtype == core::DType::F16 || dtype == core::DType::BF16, "wire16_mpi_op: " << core::dtype_name(dtype));
  static std::once_flag once;
  static Ops ops;
  std::call_once(once, [] {
    using kernels::Wire16;
    using core::ReduceOp;
    MDDP_MPI_CHECK(MPI_Op_create(&combine<Wire16::F16, ReduceOp::Sum>, 1, &ops.op[0][0]));
    MDDP_MPI_CHECK(MPI_Op_create(&combine<Wire16::F16, ReduceOp::Max>, 1, &ops.op[0][1]));
    MDDP_MPI_CHECK(MPI_Op_create(&combine<Wire16::F16, ReduceOp::Min>, 1, &ops.op[0][2]));
    MDDP_MPI_CHECK(MPI_Op_create(&combine<Wire16::BF16, ReduceOp::Sum>, 1, &ops.op[1][0]));
    MDDP_MPI_CHECK(MPI_Op_create(&combine<Wire16::BF16, ReduceOp::Max>, 1, &ops.op[1][1]));
    MDDP_MPI_CHECK(MPI_Op_create(&combine<Wire16::BF16, ReduceOp::Min>, 1, &ops.op[1][2]));
  });
  return ops.op[dtype == core::DType::F16 ? 0 : 1][op_index(op)];
}

}  // namespace microddp::comm
