// host_reduce.hpp — reduction loops on host buffers, used by the hand-rolled collectives and by
// Mean (sum, then scale). Per-element math from elementwise.hpp.
// Contract: dst and src have the same dtype and count; dst[i] = reduce_pair(op, dst[i], src[i]).
#pragma once

#include "core/reduce_op.hpp"
#include "core/tensor_view.hpp"

namespace microddp::kernels {

// dst[i] = op(dst[i], src[i]) for i < dst.count (Mean combines like Sum).
void host_reduce_into(core::TensorView dst, core::TensorView src, core::ReduceOp op);
// dst[i] = op(a[i], b[i]) (out-of-place; dst may alias a or b).
void host_reduce(core::TensorView dst, core::TensorView a, core::TensorView b, core::ReduceOp op);
// x[i] *= alpha (floating-point dtypes only; computed in the element's precision).
void host_scale(core::TensorView x, double alpha);

}  // namespace microddp::kernels
