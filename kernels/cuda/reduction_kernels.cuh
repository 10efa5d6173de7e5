// reduction_kernels.cuh — the bodies of the CUDA kernels that reduce, launched by
// reduction_kernels.cu: bias gradient (column sums), softmax cross-entropy (row max / row sum / loss
// over the batch) and the sum of squares (gradient norms). Deterministic: every sum is taken in an
// order fixed by the shape and the launch geometry, never by atomics or scheduling.
// Contract: device code only (launchers and host checks are in the .cu). Included by the .cu that
// launches them (nvcc, or the emulated build: tests/cuda_emu) and by tests that launch the kernels
// directly; unnamed namespace as in elementwise_kernels.cuh (one copy per translation unit).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/elementwise.hpp"
#include "kernels/launch_geometry.hpp"

namespace microddp::kernels::gpu {

namespace {

constexpr unsigned kFullWarp = 0xffffffffu;

// ---- bias_grad --------------------------------------------------------------------------------
// Block (kBiasGradCols, kBiasGradRowLanes): threadIdx.x picks a column of the 32-column tile (so a
// warp reads 32 consecutive floats of one row: coalesced), threadIdx.y a row-lane. Row-lane y sums
// rows y, y + 8, ... in order; row-lane 0 then adds the 8 partials in order and accumulates into db.
__global__ void bias_grad_kernel(float* __restrict__ db, const float* __restrict__ dy, std::int64_t rows,
                                 std::int64_t cols) {
  __shared__ float partial[kBiasGradRowLanes][kBiasGradCols];
  const std::int64_t tiles = (cols + kBiasGradCols - 1) / kBiasGradCols;
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::int64_t col = tile * kBiasGradCols + threadIdx.x;
    float sum = 0.0f;
    if (col < cols) {
      for (std::int64_t r = threadIdx.y; r < rows; r += kBiasGradRowLanes) sum += dy[r * cols + col];
    }
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && col < cols) {
      float total = partial[0][threadIdx.x];
      for (unsigned lane = 1; lane < kBiasGradRowLanes; ++lane) total += partial[lane][threadIdx.x];
      db[col] += total;
    }
    __syncthreads();  // partial[] is reused by the next tile
  }
}

// ---- softmax_xent -----------------------------------------------------------------------------
// Butterfly (xor) reductions: every lane ends with the same, bitwise identical value, because each
// step adds the same two numbers on both partner lanes (float + is commutative).
__device__ __forceinline__ float warp_max(float x) {
  for (int offset = 16; offset > 0; offset >>= 1) x = xent_max(x, __shfl_xor_sync(kFullWarp, x, offset));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(kFullWarp, x, offset);
  return x;
}

// One warp per row (rows strided over the grid). Lane l handles classes l, l + 32, ...; pass 1
// stores e_j = exp(x_j - M) into dlogits, pass 2 turns it into the gradient (the same lane reads
// back what it wrote, so no synchronisation is needed). Row losses are summed per warp in double
// (lane 0, row order), then per block in warp order into block_partials[blockIdx.x].
__global__ void softmax_xent_kernel(const float* __restrict__ logits, const std::int32_t* __restrict__ labels,
                                    std::int64_t rows, std::int64_t classes, float scale, float* __restrict__ dlogits,
                                    double* __restrict__ block_partials, int* __restrict__ error_flag) {
  __shared__ double warp_loss[kXentWarpsPerBlock];
  const unsigned warp = threadIdx.x / 32;
  const unsigned lane = threadIdx.x % 32;
  double loss = 0.0;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kXentWarpsPerBlock + warp; row < rows;
       row += static_cast<std::int64_t>(gridDim.x) * kXentWarpsPerBlock) {
    const float* __restrict__ x = logits + row * classes;
    float* __restrict__ d = dlogits + row * classes;
    float row_max = -INFINITY;
    for (std::int64_t j = lane; j < classes; j += 32) row_max = xent_max(row_max, x[j]);
    row_max = warp_max(row_max);
    float sum_exp = 0.0f;
    for (std::int64_t j = lane; j < classes; j += 32) {
      const float e = xent_exp(x[j], row_max);
      d[j] = e;
      sum_exp += e;
    }
    sum_exp = warp_sum(sum_exp);
    const float inv_sum = 1.0f / sum_exp;
    const std::int32_t label = labels[row];
    const bool label_ok = xent_label_ok(label, classes);
    for (std::int64_t j = lane; j < classes; j += 32) d[j] = xent_grad(d[j], inv_sum, j == label, scale);
    if (lane == 0) {
      if (label_ok) {
        loss += static_cast<double>(xent_row_loss(x[label], row_max, sum_exp));
      } else {
        *error_flag = 1;  // benign race: every writer stores the same value
        loss = NAN;
      }
    }
  }
  if (lane == 0) warp_loss[warp] = loss;
  __syncthreads();
  if (threadIdx.x == 0) {
    double block_loss = 0.0;
    for (unsigned w = 0; w < kXentWarpsPerBlock; ++w) block_loss += warp_loss[w];
    block_partials[blockIdx.x] = block_loss;
  }
}

// One thread adds the (at most kXentMaxBlocks) block partials in block order: a few microseconds,
// and simpler than a tree that would have to stay deterministic too.
__global__ void softmax_xent_finish_kernel(const double* __restrict__ block_partials, unsigned blocks, float scale,
                                           float* __restrict__ loss_out) {
  double total = 0.0;
  for (unsigned b = 0; b < blocks; ++b) total += block_partials[b];
  *loss_out = static_cast<float>(static_cast<double>(scale) * total);
}

// ---- sum_squares ------------------------------------------------------------------------------
// 256 threads: as kElementwiseThreads (a streaming read); also the width of the shared-memory tree.
// kSumSquaresMaxBlocks = 1024 blocks x 256 threads = 262144 threads, about one full wave of an H100
// (132 SMs x 2048 threads): enough loads in flight to stream x at memory bandwidth, while pass 2
// only has 1024 partials (8 KiB) to add.
constexpr unsigned kSumSquaresThreads = 256;
static_assert((kSumSquaresThreads & (kSumSquaresThreads - 1)) == 0, "the tree below halves a power of two");

// Sum of the block's `v` in a fixed tree order (pairs at distance 128, 64, ..., 1), identical on
// every run; the result is valid in thread 0. Every thread of the block must call it.
__device__ double block_sum(double v) {
  __shared__ double partial[kSumSquaresThreads];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (unsigned stride = kSumSquaresThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  return partial[0];
}

// Pass 1: thread t of block b squares elements b * 256 + t, + gridDim.x * 256, ... in double (a
// float's square is exact in double: 24-bit mantissas give a 48-bit product, so FMA contraction
// cannot change the result) and block b writes its tree sum to partials[b].
__global__ void sum_squares_kernel(const float* __restrict__ x, std::int64_t n, double* __restrict__ partials) {
  double acc = 0.0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kSumSquaresThreads;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kSumSquaresThreads + threadIdx.x; i < n; i += stride) {
    const double v = x[i];
    acc += v * v;
  }
  const double block_total = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = block_total;
}

// Pass 2 (one block): thread t adds partials t, t + 256, ... in order, then the same tree as pass 1.
// blocks == 0 (n == 0) leaves every thread at 0, so *out = 0.
__global__ void sum_squares_finish_kernel(const double* __restrict__ partials, unsigned blocks,
                                          double* __restrict__ out) {
  double acc = 0.0;
  for (unsigned b = threadIdx.x; b < blocks; b += kSumSquaresThreads) acc += partials[b];
  const double total = block_sum(acc);
  if (threadIdx.x == 0) *out = total;
}

}  // namespace

}  // namespace microddp::kernels::gpu
