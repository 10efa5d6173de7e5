// grid_stride.cuh — the index of a grid-stride loop, for every element-wise kernel:
//   for (std::int64_t i = first_index(); i < n; i += grid_stride()) ...
// 64-bit so any count works (launch_geometry.hpp caps the grid; the loop covers the rest).
// Contract: device code only; in an unnamed namespace like the kernels that include it (one copy per
// translation unit, no device linking).
#pragma once

#include <cstdint>

namespace microddp::kernels::gpu {
namespace {

__device__ __forceinline__ std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

}  // namespace
}  // namespace microddp::kernels::gpu
