// Lab 13 — the GPU track: a sum reduction in three versions and the bf16 wire encode in two.
// Read docs/labs/13-gpu-kernels/README.md first. Build (emulated device, no GPU needed):
//   cmake --preset cuda-emu && cmake --build build-cuda-emu --target lab_grade_gpu
// grade: ./build-cuda-emu/tests/labs/lab_grade_gpu (on a real GPU: build/tests/labs/lab_grade_gpu).
// Each version is a kernel and its launcher; the launchers' contract is in src/labs/lab_gpu_kernels.hpp.
// The kernels have external linkage (the product's are file-local) so the empty ones below compile
// without "unused" warnings; keep their names, or rename them, as you like.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/launch.hpp"   // MDDP_LAUNCH(kernel, grid, block, shared_bytes, stream)(args...)
#include "kernels/elementwise.hpp"   // kernels::float_bits / float_from_bits: a float's 32 bits, on host and device
#include "labs/lab_gpu_kernels.hpp"  // kLabThreads, kLabMaxBlocks and the launchers' contract

namespace microddp::labs::gpu {

// ---- (a) sum: *out = x[0] + ... + x[n-1] ------------------------------------------------------

// v1: thread i adds x[i] to *out with atomicAdd (when i < n).
__global__ void sum_v1_kernel(const float* __restrict__ x, std::int64_t n, float* __restrict__ out) {
  // TODO(lab 13)
  (void)x;
  (void)n;
  (void)out;
}

// v2: each block loads its kLabThreads elements into a __shared__ array (0 past n), adds them in a
// tree (the lower half adds the upper half, kLabThreads / 2, ..., 1 apart), and thread 0 adds the
// block's sum to *out with one atomicAdd.
__global__ void sum_v2_kernel(const float* __restrict__ x, std::int64_t n, float* __restrict__ out) {
  // TODO(lab 13)
  (void)x;
  (void)n;
  (void)out;
}

// v3: a grid-stride loop (thread t of the grid sums x[t], x[t + gridDim.x * blockDim.x], ...), then
// __shfl_down_sync within each warp, the warps' sums through __shared__ memory, a last warp sum, and
// one atomicAdd per block.
__global__ void sum_v3_kernel(const float* __restrict__ x, std::int64_t n, float* __restrict__ out) {
  // TODO(lab 13)
  (void)x;
  (void)n;
  (void)out;
}

void sum_v1(const float* x, std::int64_t n, float* out, cudaStream_t stream) {
  // TODO(lab 13): set *out, launch sum_v1_kernel on `stream` (enough blocks for every element), then
  // delete the next line.
  lab_todo("13", "sum_v1", "docs/labs/13-gpu-kernels/gpu_kernels.cu");
  (void)x;
  (void)n;
  (void)out;
  (void)stream;
}

void sum_v2(const float* x, std::int64_t n, float* out, cudaStream_t stream) {
  // TODO(lab 13): as sum_v1, with sum_v2_kernel; then delete the next line.
  lab_todo("13", "sum_v2", "docs/labs/13-gpu-kernels/gpu_kernels.cu");
  (void)x;
  (void)n;
  (void)out;
  (void)stream;
}

void sum_v3(const float* x, std::int64_t n, float* out, cudaStream_t stream) {
  // TODO(lab 13): as sum_v1, with sum_v3_kernel on at most kLabMaxBlocks blocks; then delete the next line.
  lab_todo("13", "sum_v3", "docs/labs/13-gpu-kernels/gpu_kernels.cu");
  (void)x;
  (void)n;
  (void)out;
  (void)stream;
}

// ---- (b) fp32 -> bf16, rounded to nearest, ties to even; Inf stays Inf, NaN stays NaN ------------

// v1: thread i writes out[i] (when i < n).
__global__ void bf16_encode_v1_kernel(const float* __restrict__ x, std::int64_t n, std::uint16_t* __restrict__ out) {
  // TODO(lab 13)
  (void)x;
  (void)n;
  (void)out;
}

// v2: a grid-stride loop over the n / 4 groups of four elements (a float4 load, a ushort4 store:
// make_ushort4), then the last n % 4 elements.
__global__ void bf16_encode_v2_kernel(const float* __restrict__ x, std::int64_t n, std::uint16_t* __restrict__ out) {
  // TODO(lab 13)
  (void)x;
  (void)n;
  (void)out;
}

void bf16_encode_v1(const float* x, std::int64_t n, std::uint16_t* out, cudaStream_t stream) {
  // TODO(lab 13): launch bf16_encode_v1_kernel on `stream`, then delete the next line.
  lab_todo("13", "bf16_encode_v1", "docs/labs/13-gpu-kernels/gpu_kernels.cu");
  (void)x;
  (void)n;
  (void)out;
  (void)stream;
}

void bf16_encode_v2(const float* x, std::int64_t n, std::uint16_t* out, cudaStream_t stream) {
  // TODO(lab 13): launch bf16_encode_v2_kernel on at most kLabMaxBlocks blocks, then delete the next line.
  lab_todo("13", "bf16_encode_v2", "docs/labs/13-gpu-kernels/gpu_kernels.cu");
  (void)x;
  (void)n;
  (void)out;
  (void)stream;
}

}  // namespace microddp::labs::gpu
