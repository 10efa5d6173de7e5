// reduction_kernels.cu — the CUDA kernels that reduce: bias gradient (column sums), softmax
// cross-entropy (row max / row sum / loss over the batch) and the sum of squares (gradient norms).
// Contract: see cuda_kernels.hpp. Deterministic: every sum is taken in an order fixed by the shape
// and the launch geometry (which depends only on the shape), never by atomics or scheduling, so a
// rerun is bitwise identical. Per-element math is elementwise.hpp's (xent_*, shared with CpuOps).
// The kernel bodies are in reduction_kernels.cuh; this file checks arguments and launches them.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launch.hpp"
#include "kernels/cuda/reduction_kernels.cuh"
#include "kernels/cuda_kernels.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/launch_geometry.hpp"

namespace microddp::kernels::gpu {

void bias_grad(float* db, const float* dy, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  const LaunchGeometry g = bias_grad_geometry(rows, cols);  // checks the shape
  if (g.empty() || cols == 0) return;
  MDDP_CHECK(rows <= INT64_MAX / cols, "bias_grad: rows * cols overflows int64");
  MDDP_LAUNCH(bias_grad_kernel, g.blocks, dim3(kBiasGradCols, kBiasGradRowLanes), 0, stream)(db, dy, rows, cols);
  MDDP_CUDA_CHECK_LAUNCH();
}

std::size_t softmax_xent_workspace_bytes() {
  // partials first (8-byte aligned at a cudaMalloc'd base), then the flag.
  return kXentMaxBlocks * sizeof(double) + sizeof(int);
}

XentWorkspace softmax_xent_workspace(void* base, std::size_t bytes) {
  MDDP_CHECK(base != nullptr && bytes >= softmax_xent_workspace_bytes(),
             "softmax_xent workspace of " << bytes << " bytes, need " << softmax_xent_workspace_bytes());
  MDDP_CHECK(reinterpret_cast<std::uintptr_t>(base) % alignof(double) == 0, "softmax_xent workspace misaligned");
  XentWorkspace ws;
  ws.block_partials = static_cast<double*>(base);
  ws.error_flag = reinterpret_cast<int*>(static_cast<char*>(base) + kXentMaxBlocks * sizeof(double));
  return ws;
}

void softmax_xent(const float* logits, const std::int32_t* labels, std::int64_t rows, std::int64_t classes, float scale,
                  float* dlogits, float* loss_out, XentWorkspace ws, cudaStream_t stream) {
  MDDP_CHECK(rows >= 0 && classes >= 1, "softmax_xent: bad shape (" << rows << ", " << classes << ")");
  MDDP_CHECK(rows <= INT64_MAX / classes, "softmax_xent: rows * classes overflows int64");
  MDDP_CHECK(ws.block_partials != nullptr && ws.error_flag != nullptr, "softmax_xent: no workspace");
  const LaunchGeometry g = softmax_xent_geometry(rows);
  if (!g.empty()) {
    MDDP_LAUNCH(softmax_xent_kernel, g.blocks, g.threads, 0, stream)
    (logits, labels, rows, classes, scale, dlogits, ws.block_partials, ws.error_flag);
    MDDP_CUDA_CHECK_LAUNCH();
  }
  // Also for rows == 0, so the loss is always overwritten (with 0).
  MDDP_LAUNCH(softmax_xent_finish_kernel, 1, 1, 0, stream)(ws.block_partials, g.blocks, scale, loss_out);
  MDDP_CUDA_CHECK_LAUNCH();
}

std::size_t sum_squares_workspace_bytes() { return kSumSquaresMaxBlocks * sizeof(double); }

void sum_squares(const float* x, std::int64_t n, double* partials, double* out, cudaStream_t stream) {
  MDDP_CHECK(n >= 0, "sum_squares: negative count " << n);
  MDDP_CHECK(partials != nullptr && out != nullptr, "sum_squares: no workspace or output");
  MDDP_CHECK(x != nullptr || n == 0, "sum_squares: null input for " << n << " elements");
  // The grid depends on n only (never on the GPU), so the summation order and its rounding do too.
  const LaunchGeometry g = grid_stride_geometry(n, kSumSquaresThreads, kSumSquaresMaxBlocks);
  if (!g.empty()) {
    MDDP_LAUNCH(sum_squares_kernel, g.blocks, kSumSquaresThreads, 0, stream)(x, n, partials);
    MDDP_CUDA_CHECK_LAUNCH();
  }
  // Also for n == 0, so *out is always overwritten (with 0).
  MDDP_LAUNCH(sum_squares_finish_kernel, 1, kSumSquaresThreads, 0, stream)(partials, g.blocks, out);
  MDDP_CUDA_CHECK_LAUNCH();
}

}  // namespace microddp::kernels::gpu
