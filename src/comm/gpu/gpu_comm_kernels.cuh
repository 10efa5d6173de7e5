// gpu_comm_kernels.cuh — the bodies of the communication kernels launched by gpu_comm_kernels.cu:
// element-wise reduction (f64 and the integer dtypes; f32 uses kernels/cuda's) and the f64 scaling
// of Mean. Grid-stride loops with 64-bit indices.
// Contract: device code only (launchers are in the .cu). Included by the .cu (nvcc, or the emulated
// build: tests/cuda_emu) and by tests that launch the kernels directly; unnamed namespace, as in
// kernels/cuda/elementwise_kernels.cuh (one copy per translation unit).
#pragma once

#include <cstdint>

#include "core/reduce_op.hpp"
#include "kernels/cuda/grid_stride.cuh"
#include "kernels/elementwise.hpp"

namespace microddp::comm::gpu {

namespace {

using kernels::gpu::first_index;
using kernels::gpu::grid_stride;

template <typename T>
__global__ void reduce_kernel(T* dst, const T* a, const T* b, std::int64_t n, core::ReduceOp op) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dst[i] = kernels::reduce_pair(op, a[i], b[i]);
}

__global__ void scale_f64_kernel(double* x, double alpha, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) x[i] *= alpha;
}

}  // namespace

}  // namespace microddp::comm::gpu
