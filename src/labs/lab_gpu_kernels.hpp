// lab_gpu_kernels.hpp — lab 13 (docs/labs/13-gpu-kernels): the CUDA kernels the student writes, in
// versions, each behind a host launcher with the same contract, so one grader checks every version
// against a CPU reference and times it. Only in builds with MICRODDP_CUDA (nvcc, or the emulated
// device of tests/cuda_emu). The student's file is docs/labs/13-gpu-kernels/gpu_kernels.cu; the
// reference solution tests/labs/solutions/gpu_kernels.cu (read it after).
// Every launcher: pointers are device memory (cudaMalloc), n >= 0 elements (a 64-bit count); the
// work is queued on `stream` and the launcher returns at once (no synchronisation); a refused launch
// is left for cudaGetLastError(), which the caller checks.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string_view>

namespace microddp::labs {

// What an untouched starter calls (declared with the other labs' functions in lab_api.hpp, here too
// so a kernel source need not include the communication headers): throws "lab 13 is not done yet".
[[noreturn]] void lab_todo(std::string_view lab, std::string_view function, std::string_view file);

namespace gpu {

// Threads per block of every version: a multiple of the warp size (32) and a power of two (the
// shared-memory tree halves it).
inline constexpr int kLabThreads = 256;
// v3 and bf16 v2 launch at most this many blocks and loop over the rest (grid-stride): about
// 4 blocks of 256 threads for each of an H100's 132 SMs, enough to keep every SM busy.
inline constexpr int kLabMaxBlocks = 528;

// (a) Sum reduction: *out = x[0] + ... + x[n-1] in float (n = 0: *out = 0). *out holds anything
// before the call (the launcher sets it first). The order of the additions is the kernel's choice,
// so the result agrees with an exact sum to within n rounding errors, not bitwise.
// v1: one thread per element, each adds its element to *out with atomicAdd (n atomics).
void sum_v1(const float* x, std::int64_t n, float* out, cudaStream_t stream);
// v2: one thread per element; each block adds its kLabThreads elements in a shared-memory tree
// (__syncthreads between the levels), then thread 0 adds the block's sum with one atomicAdd.
void sum_v2(const float* x, std::int64_t n, float* out, cudaStream_t stream);
// v3: at most kLabMaxBlocks blocks, a grid-stride loop (each thread sums many elements), then warp
// shuffles (__shfl_down_sync) within each warp, the warps' sums through shared memory, and one
// atomicAdd per block.
void sum_v3(const float* x, std::int64_t n, float* out, cudaStream_t stream);

// (b) fp32 -> bf16, gradient compression's wire encode: out[i] = the bf16 bits of x[i], rounded to
// nearest, ties to even; +-Inf stay +-Inf, a NaN stays a NaN; exactly the bits of
// kernels::float_to_bf16_bits (kernels/elementwise.hpp), which the grader compares against.
// v1: one thread per element.
void bf16_encode_v1(const float* x, std::int64_t n, std::uint16_t* out, cudaStream_t stream);
// v2: at most kLabMaxBlocks blocks, a grid-stride loop over groups of four elements (one 16-byte
// float4 load, one 8-byte store of four bf16), and the last n % 4 elements one by one. x must be
// 16-byte aligned and out 8-byte aligned (cudaMalloc's 256-byte alignment is).
void bf16_encode_v2(const float* x, std::int64_t n, std::uint16_t* out, cudaStream_t stream);

}  // namespace gpu
}  // namespace microddp::labs
