// launch_geometry.hpp — grid/block sizes for the CUDA kernels, as plain host functions so the CPU
// unit tests check them (tests/kernels/test_launch_geometry.cpp).
// Contract: counts are 64-bit; a count of 0 gives blocks == 0, which launchers treat as "launch
// nothing" (a <<<0, ...>>> launch is an error in CUDA). Grids are capped, and the kernels cover the
// rest with grid-stride loops, so any int64 count is handled. Geometry depends only on the counts,
// never on the GPU model, so a reduction's order (and its rounding) is the same on every GPU.
#pragma once

#include <cstdint>

#include "core/error.hpp"

namespace microddp::kernels {

struct LaunchGeometry {
  std::uint32_t blocks = 0;   // gridDim.x; 0 means nothing to launch
  std::uint32_t threads = 0;  // blockDim.x (total threads for 2-D blocks)
  bool empty() const { return blocks == 0; }
};

// 256 threads: a multiple of the 32-lane warp that lets 8 blocks share an SM (2048 threads) on
// A100/H100, the usual choice for memory-bound element-wise kernels.
inline constexpr std::uint32_t kElementwiseThreads = 256;
// Grid-stride cap: 65536 blocks x 256 threads = 16.8M threads, over 30 waves of a full H100
// (132 SMs x 2048 threads); more blocks only add scheduling work, and the cap keeps gridDim.x far
// below CUDA's 2^31 - 1 limit.
inline constexpr std::uint32_t kMaxGridStrideBlocks = 65536;

// ceil(count / per), for count >= 0 and per > 0, without the overflow of (count + per - 1).
constexpr std::int64_t ceil_div(std::int64_t count, std::int64_t per) {
  return count / per + (count % per != 0 ? 1 : 0);
}

// For a grid-stride loop over `count` elements.
inline LaunchGeometry grid_stride_geometry(std::int64_t count, std::uint32_t threads = kElementwiseThreads,
                                           std::uint32_t max_blocks = kMaxGridStrideBlocks) {
  MDDP_CHECK(count >= 0, "launch geometry: negative count " << count);
  MDDP_CHECK(threads > 0 && threads <= 1024 && threads % 32 == 0,
             "launch geometry: " << threads << " threads per block is not a warp multiple in [32, 1024]");
  MDDP_CHECK(max_blocks > 0, "launch geometry: max_blocks must be > 0");
  const std::int64_t want = ceil_div(count, threads);
  const std::int64_t blocks = want < max_blocks ? want : max_blocks;
  return LaunchGeometry{static_cast<std::uint32_t>(blocks), threads};
}

// softmax_xent: one warp per row, 8 warps (256 threads) per block, at most kXentMaxBlocks blocks
// (rows beyond that are strided). Each block writes one double partial loss, so the cap is also the
// size of the partials workspace; 1024 blocks x 8 warps = 8192 rows in flight is plenty for a loss.
inline constexpr std::uint32_t kXentWarpsPerBlock = 8;
inline constexpr std::uint32_t kXentMaxBlocks = 1024;
inline LaunchGeometry softmax_xent_geometry(std::int64_t rows) {
  MDDP_CHECK(rows >= 0, "launch geometry: negative row count " << rows);
  const std::int64_t want = ceil_div(rows, kXentWarpsPerBlock);
  return LaunchGeometry{static_cast<std::uint32_t>(want < kXentMaxBlocks ? want : kXentMaxBlocks),
                        kXentWarpsPerBlock * 32};
}

// bias_grad: blocks of 32 columns x 8 row-lanes (256 threads); one block per 32-column tile, capped
// (grid-stride over tiles). Each of the 8 row-lanes sums rows r = lane, lane + 8, ...; the 8 partials
// are then added in a fixed order, so the result is deterministic.
inline constexpr std::uint32_t kBiasGradCols = 32;
inline constexpr std::uint32_t kBiasGradRowLanes = 8;
inline LaunchGeometry bias_grad_geometry(std::int64_t rows, std::int64_t cols) {
  MDDP_CHECK(rows >= 0 && cols >= 0, "launch geometry: negative shape (" << rows << ", " << cols << ")");
  const std::uint32_t threads = kBiasGradCols * kBiasGradRowLanes;
  if (rows == 0) return LaunchGeometry{0, threads};  // db += 0: nothing to do
  const std::int64_t tiles = ceil_div(cols, kBiasGradCols);
  return LaunchGeometry{static_cast<std::uint32_t>(tiles < kMaxGridStrideBlocks ? tiles : kMaxGridStrideBlocks),
                        threads};
}

// synthetic_rows' labels: one sample per lane of a warp, kSyntheticLabelWarps warps per block
// (256 threads) sharing a tile of 32 samples and splitting its classes (warp w scores classes
// w, w + 8, ...); one block per tile, capped (grid-stride over tiles). The labels do not depend on
// the grid: each sample's scores are sums in a fixed order (synthetic_data.hpp).
inline constexpr std::uint32_t kSyntheticLabelWarps = 8;
inline LaunchGeometry synthetic_labels_geometry(std::int64_t count) {
  MDDP_CHECK(count >= 0, "launch geometry: negative sample count " << count);
  const std::int64_t tiles = ceil_div(count, 32);
  return LaunchGeometry{static_cast<std::uint32_t>(tiles < kMaxGridStrideBlocks ? tiles : kMaxGridStrideBlocks),
                        kSyntheticLabelWarps * 32};
}

}  // namespace microddp::kernels
