// test_bucket_planner.cpp — the bucket planner is a pure function: order, contiguity, caps.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.hpp"
#include "ddp/bucket_planner.hpp"

namespace microddp::ddp {
namespace {

// Parameters with the given element counts, laid out contiguously in gradient-ready order.
std::vector<model::ParamInfo> params_of(const std::vector<std::int64_t>& counts) {
  std::vector<model::ParamInfo> ps;
  std::int64_t off = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    model::ParamInfo p;
    p.name = "p";  // appended, not "p" + ...: GCC 12 warns -Wrestrict on that (a false positive)
    p.name += std::to_string(i);
    p.index = static_cast<int>(i);
    p.offset = off;
    p.count = counts[i];
    off += counts[i];
    ps.push_back(p);
  }
  return ps;
}

// Every plan must cover all parameters once, in order, as contiguous slices.
void expect_valid(const std::vector<model::ParamInfo>& ps, const std::vector<Bucket>& plan) {
  ASSERT_FALSE(plan.empty());
  int next_param = 0;
  std::int64_t next_offset = 0;
  for (std::size_t b = 0; b < plan.size(); ++b) {
    EXPECT_EQ(plan[b].index, static_cast<int>(b));
    EXPECT_EQ(plan[b].first_param, next_param);
    EXPECT_GT(plan[b].end_param, plan[b].first_param);
    EXPECT_EQ(plan[b].offset, next_offset);
    std::int64_t count = 0;
    for (int p = plan[b].first_param; p < plan[b].end_param; ++p) count += ps[static_cast<std::size_t>(p)].count;
    EXPECT_EQ(plan[b].count, count);
    next_param = plan[b].end_param;
    next_offset += plan[b].count;
  }
  EXPECT_EQ(next_param, static_cast<int>(ps.size()));
}

std::vector<std::vector<int>> groups(const std::vector<Bucket>& plan) {
  std::vector<std::vector<int>> g;
  for (const auto& b : plan) {
    g.emplace_back();
    for (int p = b.first_param; p < b.end_param; ++p) g.back().push_back(p);
  }
  return g;
}

TEST(BucketPlanner, EverythingFitsInOneBucket) {
  const auto ps = params_of({3, 48, 16, 256});
  const auto plan = plan_buckets(ps, 1 << 20);
  expect_valid(ps, plan);
  EXPECT_EQ(plan.size(), 1u);
}

TEST(BucketPlanner, GreedyInGradientReadyOrderNeverExceedsCap) {
  const auto ps = params_of({10, 10, 10, 10, 10});  // 40 bytes each
  const auto plan = plan_buckets(ps, 100);          // two fit (80), a third would make 120
  expect_valid(ps, plan);
  EXPECT_EQ(groups(plan), (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4}}));
  for (const auto& b : plan) EXPECT_LE(b.bytes(), 100);
}

TEST(BucketPlanner, ExactlyFullBucketIsClosedAtTheCap) {
  const auto ps = params_of({10, 15, 1});  // 40 + 60 = 100 bytes = cap exactly; +4 would exceed
  const auto plan = plan_buckets(ps, 100);
  expect_valid(ps, plan);
  EXPECT_EQ(groups(plan), (std::vector<std::vector<int>>{{0, 1}, {2}}));
}

TEST(BucketPlanner, ParameterLargerThanCapGetsItsOwnBucket) {
  const auto ps = params_of({2, 1000, 2, 2});  // 8, 4000, 8, 8 bytes; cap 64
  const auto plan = plan_buckets(ps, 64);
  expect_valid(ps, plan);
  EXPECT_EQ(groups(plan), (std::vector<std::vector<int>>{{0}, {1}, {2, 3}}));
  EXPECT_EQ(plan[1].bytes(), 4000);
}

TEST(BucketPlanner, TinyCapGivesOneBucketPerParameter) {
  const auto ps = params_of({3, 48, 16, 256, 16, 128});
  const auto plan = plan_buckets(ps, 1);
  expect_valid(ps, plan);
  EXPECT_EQ(plan.size(), ps.size());
  const auto per = plan_per_parameter(ps);
  expect_valid(ps, per);
  EXPECT_EQ(groups(per), groups(plan));
}

TEST(BucketPlanner, SmallerFirstBucket) {
  const auto ps = params_of({10, 10, 10, 10, 10, 10});  // 40 bytes each
  const auto plan = plan_buckets(ps, 120, 40);          // first bucket: one parameter; then three each
  expect_valid(ps, plan);
  EXPECT_EQ(groups(plan), (std::vector<std::vector<int>>{{0}, {1, 2, 3}, {4, 5}}));
  // first cap 0 means "same as cap"
  EXPECT_EQ(groups(plan_buckets(ps, 120, 0)), groups(plan_buckets(ps, 120)));
}

TEST(BucketPlanner, SamePlanEveryTime) {
  const auto ps = params_of({7, 300, 7, 300, 5, 50});
  EXPECT_EQ(groups(plan_buckets(ps, 1000, 100)), groups(plan_buckets(ps, 1000, 100)));
}

TEST(BucketPlanner, RejectsNonContiguousLayoutAndBadCaps) {
  auto ps = params_of({4, 4, 4});
  EXPECT_THROW(plan_buckets(ps, 0), core::Error);
  EXPECT_THROW(plan_buckets(ps, 16, -1), core::Error);
  ps[2].offset += 1;  // a gap: bucket would not be one slice
  EXPECT_THROW(plan_buckets(ps, 16), core::Error);
  EXPECT_THROW(plan_per_parameter(ps), core::Error);
}

TEST(BucketPlanner, AlignedModelLayoutBucketsSpanThePadding) {
  // The real layout: every parameter 256-byte aligned, zero padding between them.
  const auto ps = model::param_layout({5, 7, 3, 4});
  for (const std::int64_t cap : {4, 300, 1000, 4096, 1 << 20}) {
    const auto plan = plan_buckets(ps, cap);
    std::int64_t next_param = 0, next_offset = 0;
    for (const Bucket& b : plan) {
      EXPECT_EQ(b.first_param, next_param);
      EXPECT_EQ(b.offset, next_offset);  // the slice starts where the previous one ended (+ padding)
      const auto& last = ps[static_cast<std::size_t>(b.end_param - 1)];
      EXPECT_EQ(b.offset + b.count, last.offset + last.count);  // and covers its last parameter
      // Within the cap unless it is a single parameter larger than the cap.
      if (b.num_params() > 1) {
        EXPECT_LE(b.bytes(), cap);
      }
      next_param = b.end_param;
      next_offset = model::align_param_count(b.offset + b.count);
    }
    EXPECT_EQ(next_param, static_cast<std::int64_t>(ps.size()));
  }
  // 1 MiB: one bucket over the whole layout but the trailing padding.
  const auto one = plan_buckets(ps, 1 << 20);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].count, ps.back().offset + ps.back().count);
  EXPECT_EQ(model::align_param_count(one[0].count), model::flat_count(ps));
}

TEST(BucketPlanner, MibToBytes) {
  EXPECT_EQ(mib_to_bytes(25), 25ll << 20);
  EXPECT_EQ(mib_to_bytes(0.25), 1ll << 18);
  EXPECT_THROW(mib_to_bytes(-1), core::Error);
}

}  // namespace
}  // namespace microddp::ddp
