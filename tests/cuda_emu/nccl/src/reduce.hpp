// reduce.hpp — the element-wise reduction every reducing collective uses, in a fixed order.
//
// Contract of reduce_in_order(out, inputs, k, count, dtype, op):
//   * out[i] = (((in[0][i] ⊕ in[1][i]) ⊕ in[2][i]) ⊕ ... ⊕ in[k-1][i]): left to right, the order the
//     caller gives (rank order 0..n-1 in every collective), so every rank that reduces the same inputs
//     gets the same bits.
//   * Integers: Sum and Prod wrap modulo 2^bits (as the GPU's integer units do), Max/Min compare values,
//     Avg is the wrapped sum divided by k with C++ integer division (truncation toward zero).
//   * float / double: accumulated in their own type; Max/Min are fmax/fmin (a NaN loses to a number,
//     like NCCL's fmaxf/fminf); Avg is the sum divided by k, one rounding (not NCCL's pre-multiplication
//     by 1/k, which rounds every input).
//   * fp16 / bf16: converted to float exactly, accumulated in float in the same order, the result
//     rounded once to nearest-even (Avg: sum / k in float, then the one rounding).
//   * `out` may be one of the inputs at the same indices (in-place collectives): element i of every
//     input is read before element i of out is written. Other overlaps are not allowed.
#pragma once

#include <nccl.h>

#include <cstddef>

namespace cuda_emu::nccl {

void reduce_in_order(void* out, const void* const* inputs, int k, std::size_t count, ncclDataType_t dtype,
                     ncclRedOp_t op);

}  // namespace cuda_emu::nccl
