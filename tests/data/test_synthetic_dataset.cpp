// test_synthetic_dataset.cpp — samples are pure functions of (seed, index); rank slices tile the
// global batch exactly (including uneven splits); labels use every class; the device generator on
// the CPU writes fill's bits (on a GPU: test_synthetic_device.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "data/synthetic_dataset.hpp"
#include "kernels/ops.hpp"

namespace microddp::data {
namespace {

TEST(SyntheticDataset, SampleDependsOnlyOnSeedAndIndex) {
  SyntheticDataset d(5, 8, 3);
  std::vector<float> xa(10 * 8), xb(4 * 8);
  std::vector<std::int32_t> ya(10), yb(4);
  d.fill(100, 10, xa.data(), ya.data());
  d.fill(103, 4, xb.data(), yb.data());  // a sub-range read separately
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(ya[3 + s], yb[s]);
    for (int j = 0; j < 8; ++j) EXPECT_EQ(xa[(3 + s) * 8 + j], xb[s * 8 + j]);
  }
  SyntheticDataset other(6, 8, 3);
  std::vector<float> xc(10 * 8);
  other.fill(100, 10, xc.data(), ya.data());
  EXPECT_NE(xa[0], xc[0]);
}

TEST(SyntheticDataset, LabelsCoverAllClasses) {
  SyntheticDataset d(1, 16, 4);
  std::vector<float> x(1000 * 16);
  std::vector<std::int32_t> y(1000);
  d.fill(0, 1000, x.data(), y.data());
  std::vector<int> counts(4, 0);
  for (auto v : y) {
    ASSERT_GE(v, 0);
    ASSERT_LT(v, 4);
    ++counts[static_cast<std::size_t>(v)];
  }
  for (int c : counts) EXPECT_GT(c, 100);  // a random linear teacher is roughly balanced
}

TEST(SyntheticDataset, DeviceGeneratorOnTheCpuWritesFillsBits) {
  auto ops = kernels::make_cpu_ops(1);
  SyntheticDataset d(9, 33, 5);
  auto gen = d.make_device_generator(*ops);
  ASSERT_NE(gen, nullptr);
  for (const auto& [first, count] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {0, 1}, {41, 19}, {1000, 64}}) {
    std::vector<float> xa(static_cast<std::size_t>(count * 33)), xb(xa.size(), -1.0f);
    std::vector<std::int32_t> ya(static_cast<std::size_t>(count)), yb(ya.size(), -1);
    d.fill(first, count, xa.data(), ya.data());
    gen->fill(first, count, xb.data(), yb.data());
    // (count 0: empty vectors, whose data() may be null, which memcmp must not get)
    EXPECT_TRUE(xa.empty() || std::memcmp(xa.data(), xb.data(), xa.size() * sizeof(float)) == 0) << first << " " << count;
    EXPECT_EQ(ya, yb) << first << " " << count;
  }
}

TEST(Sampler, RankSlicesTileTheGlobalBatch) {
  for (std::int64_t batch : {1, 7, 8, 13, 256}) {
    for (int n = 1; n <= 5; ++n) {
      if (batch < n) continue;
      std::int64_t next = 0, max_count = 0;
      for (int r = 0; r < n; ++r) {
        Sampler s(batch, r, n);
        EXPECT_EQ(s.local_offset(), next) << batch << " " << n << " " << r;
        next += s.local_count();
        max_count = std::max(max_count, s.local_count());
        EXPECT_EQ(s.first_sample(3), 3 * batch + s.local_offset());
        EXPECT_LE(s.local_count() - batch / n, 1);
      }
      EXPECT_EQ(next, batch);
      EXPECT_EQ(max_count, Sampler::max_local_count(batch, n));
    }
  }
}

}  // namespace
}  // namespace microddp::data
