// host_reduce.hpp — reduction loops on host buffers, used by the hand-rolled collectives and by
// Mean (sum, then scale), and the host sum of squares (CpuOps::sum_squares, gradient norms).
// Per-element math from elementwise.hpp.
// Contract: dst and src have the same dtype and count; dst[i] = reduce_pair(op, dst[i], src[i]).
#pragma once

#include <cstdint>

#include "core/reduce_op.hpp"
#include "core/tensor_view.hpp"

namespace microddp::kernels {

// dst[i] = op(dst[i], src[i]) for i < dst.count (Mean combines like Sum).
void host_reduce_into(core::TensorView dst, core::TensorView src, core::ReduceOp op);
// dst[i] = op(a[i], b[i]) (out-of-place; dst may alias a or b).
void host_reduce(core::TensorView dst, core::TensorView a, core::TensorView b, core::ReduceOp op);
// x[i] *= alpha (floating-point dtypes only; computed in the element's precision).
void host_scale(core::TensorView x, double alpha);

// sum_i x_i^2 over n >= 0 host floats, in double: 8 interleaved accumulators (element i goes to
// accumulator i % 8, the tail past the last multiple of 8 to accumulator 0), then added in order 0..7.
// The order depends only on n, so repeated calls are bitwise identical; the result is finite exactly
// when every x_i is (a float square, <= 1.2e77, cannot overflow a double, nor can 2^63 of them).
double host_sum_squares(const float* x, std::int64_t n);

}  // namespace microddp::kernels
