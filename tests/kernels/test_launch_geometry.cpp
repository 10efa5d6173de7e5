// test_launch_geometry.cpp — the grid/block arithmetic of the CUDA launchers, checked on the CPU:
// empty counts launch nothing, every element is covered by exactly one grid-stride iteration, grids
// are capped and fit gridDim.x, and 64-bit counts are handled without overflow.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "kernels/launch_geometry.hpp"

namespace microddp::kernels {
namespace {

TEST(LaunchGeometry, CeilDivWithoutOverflow) {
  EXPECT_EQ(ceil_div(0, 256), 0);
  EXPECT_EQ(ceil_div(1, 256), 1);
  EXPECT_EQ(ceil_div(256, 256), 1);
  EXPECT_EQ(ceil_div(257, 256), 2);
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(ceil_div(max, 1), max);  // (count + per - 1) would overflow here
  EXPECT_EQ(ceil_div(max, 2), max / 2 + 1);
}

TEST(LaunchGeometry, ZeroCountLaunchesNothing) {
  EXPECT_TRUE(grid_stride_geometry(0).empty());
  EXPECT_TRUE(softmax_xent_geometry(0).empty());
  EXPECT_TRUE(bias_grad_geometry(0, 10).empty());
  EXPECT_TRUE(bias_grad_geometry(10, 0).empty());
  EXPECT_TRUE(synthetic_labels_geometry(0).empty());
}

TEST(LaunchGeometry, GridStrideCoversEveryElement) {
  const std::int64_t counts[] = {1,
                                 31,
                                 255,
                                 256,
                                 257,
                                 1000003,
                                 256LL * kMaxGridStrideBlocks,
                                 256LL * kMaxGridStrideBlocks + 1,
                                 std::int64_t{1} << 40,
                                 std::numeric_limits<std::int64_t>::max()};
  for (std::int64_t n : counts) {
    const LaunchGeometry g = grid_stride_geometry(n);
    ASSERT_FALSE(g.empty()) << n;
    EXPECT_EQ(g.threads, kElementwiseThreads);
    EXPECT_LE(g.blocks, kMaxGridStrideBlocks) << n;
    EXPECT_LE(static_cast<std::int64_t>(g.blocks), std::int64_t{2147483647}) << "gridDim.x limit";
    // Below the cap: one pass covers [0, n) and no block is wholly idle. Above it: capped grid,
    // the kernel's grid-stride loop covers the rest.
    const std::int64_t total = static_cast<std::int64_t>(g.blocks) * g.threads;
    if (n <= static_cast<std::int64_t>(kMaxGridStrideBlocks) * kElementwiseThreads) {
      EXPECT_GE(total, n) << n;                                         // one pass suffices
      EXPECT_LT(total - n, static_cast<std::int64_t>(g.threads)) << n;  // no idle block
    } else {
      EXPECT_EQ(g.blocks, kMaxGridStrideBlocks) << n;  // capped; the loop strides the rest
      // The stride (blocks * threads) plus the largest index stays far below int64's limit, so the
      // kernel's `i += stride` cannot overflow before the loop ends.
      EXPECT_LT(total, std::int64_t{1} << 32);
    }
  }
}

TEST(LaunchGeometry, SimulatedGridStrideVisitsEachIndexOnce) {
  // Run the kernels' loop structure on the CPU for awkward sizes (not multiples of the block).
  for (std::int64_t n : {1, 7, 300, 70001}) {
    const LaunchGeometry g = grid_stride_geometry(n, 64, 8);  // small cap: forces several strides
    std::vector<int> hits(static_cast<std::size_t>(n), 0);
    const std::int64_t stride = static_cast<std::int64_t>(g.blocks) * g.threads;
    for (std::uint32_t block = 0; block < g.blocks; ++block) {
      for (std::uint32_t t = 0; t < g.threads; ++t) {
        for (std::int64_t i = static_cast<std::int64_t>(block) * g.threads + t; i < n; i += stride) ++hits[i];
      }
    }
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << "n=" << n << " i=" << i;
  }
}

TEST(LaunchGeometry, SoftmaxXentAndBiasGrad) {
  // One warp per row, 8 rows per block, capped at kXentMaxBlocks (the partials workspace size).
  EXPECT_EQ(softmax_xent_geometry(1).blocks, 1u);
  EXPECT_EQ(softmax_xent_geometry(8).blocks, 1u);
  EXPECT_EQ(softmax_xent_geometry(9).blocks, 2u);
  EXPECT_EQ(softmax_xent_geometry(8LL * kXentMaxBlocks + 1).blocks, kXentMaxBlocks);
  EXPECT_EQ(softmax_xent_geometry(std::int64_t{1} << 50).blocks, kXentMaxBlocks);
  EXPECT_EQ(softmax_xent_geometry(5).threads, kXentWarpsPerBlock * 32);
  // 32-column tiles.
  EXPECT_EQ(bias_grad_geometry(4, 1).blocks, 1u);
  EXPECT_EQ(bias_grad_geometry(4, 32).blocks, 1u);
  EXPECT_EQ(bias_grad_geometry(4, 33).blocks, 2u);
  EXPECT_EQ(bias_grad_geometry(4, std::int64_t{1} << 40).blocks, kMaxGridStrideBlocks);
  EXPECT_EQ(bias_grad_geometry(4, 33).threads, kBiasGradCols * kBiasGradRowLanes);
  // Synthetic labels: 32-sample tiles, one per block, capped.
  EXPECT_EQ(synthetic_labels_geometry(1).blocks, 1u);
  EXPECT_EQ(synthetic_labels_geometry(32).blocks, 1u);
  EXPECT_EQ(synthetic_labels_geometry(33).blocks, 2u);
  EXPECT_EQ(synthetic_labels_geometry(std::int64_t{1} << 40).blocks, kMaxGridStrideBlocks);
  EXPECT_EQ(synthetic_labels_geometry(5).threads, kSyntheticLabelWarps * 32);
}

TEST(LaunchGeometry, BadArgumentsThrow) {
  EXPECT_THROW(grid_stride_geometry(-1), core::Error);
  EXPECT_THROW(grid_stride_geometry(10, 0), core::Error);
  EXPECT_THROW(grid_stride_geometry(10, 100), core::Error);   // not a warp multiple
  EXPECT_THROW(grid_stride_geometry(10, 2048), core::Error);  // above CUDA's 1024 threads per block
  EXPECT_THROW(grid_stride_geometry(10, 256, 0), core::Error);
  EXPECT_THROW(softmax_xent_geometry(-3), core::Error);
  EXPECT_THROW(bias_grad_geometry(-1, 4), core::Error);
  EXPECT_THROW(synthetic_labels_geometry(-1), core::Error);
}

}  // namespace
}  // namespace microddp::kernels
