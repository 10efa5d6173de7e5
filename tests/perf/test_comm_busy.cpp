// test_comm_busy.cpp — busy communication time (the union of the collectives' execution intervals),
// queued time and overlap = 1 - exposed / busy (perf/comm_busy.hpp, perf/step_stats.hpp), on
// hand-made intervals and events with closed-form answers. All times are whole milliseconds, so
// every expectation is exact up to the ns -> ms conversion (tolerance 1e-9 ms).
#include <gtest/gtest.h>

#include <vector>

#include "perf/comm_busy.hpp"
#include "perf/step_stats.hpp"

namespace microddp::perf {
namespace {

constexpr std::int64_t kMs = 1'000'000;  // ns per ms
constexpr double kTol = 1e-9;

std::int64_t union_ms(std::vector<Interval> v) {
  for (auto& i : v) i = {i.begin_ns * kMs, i.end_ns * kMs};
  return union_length_ns(std::move(v)) / kMs;
}

TEST(UnionLength, ClosedForms) {
  EXPECT_EQ(union_ms({}), 0);
  EXPECT_EQ(union_ms({{0, 10}}), 10);
  EXPECT_EQ(union_ms({{0, 10}, {5, 15}}), 15);           // overlapping
  EXPECT_EQ(union_ms({{0, 20}, {5, 10}}), 20);           // nested
  EXPECT_EQ(union_ms({{0, 5}, {10, 20}}), 15);           // disjoint
  EXPECT_EQ(union_ms({{10, 20}, {0, 5}, {3, 12}}), 20);  // unsorted, chained into one run
  EXPECT_EQ(union_ms({{0, 5}, {5, 9}}), 9);              // touching
  EXPECT_EQ(union_ms({{0, 5}, {7, 7}, {9, 8}}), 5);      // empty and reversed add nothing
  EXPECT_EQ(union_ms({{0, 10}, {0, 10}, {0, 10}}), 10);  // the same instants counted once
}

TEST(OverlapFraction, ClosedForms) {
  EXPECT_DOUBLE_EQ(overlap_fraction(0, 0), 0.0);  // no communication: nothing to hide
  EXPECT_DOUBLE_EQ(overlap_fraction(5, 0), 0.0);
  EXPECT_DOUBLE_EQ(overlap_fraction(0, 10), 1.0);   // all hidden
  EXPECT_DOUBLE_EQ(overlap_fraction(10, 10), 0.0);  // all exposed
  EXPECT_DOUBLE_EQ(overlap_fraction(2.5, 10), 0.75);
  EXPECT_DOUBLE_EQ(overlap_fraction(12, 10), 0.0);  // exposed > busy (wait loop, decode): clamped
}

// Events of one step, in ms: the step, backward, each collective (launch, start of execution,
// completion) as a Collective and a CollectiveExec event, and the exposed wait.
struct Coll {
  std::int64_t launch, start, done;
};
std::vector<core::Event> step_events(std::int64_t step, std::int64_t step_end, std::int64_t bwd_begin,
                                     std::int64_t bwd_end, const std::vector<Coll>& colls, std::int64_t wait_begin,
                                     std::int64_t wait_end) {
  using core::EventKind;
  std::vector<core::Event> ev;
  ev.push_back({EventKind::Step, step, -1, 0, step_end * kMs, 0});
  ev.push_back({EventKind::Backward, step, -1, bwd_begin * kMs, bwd_end * kMs, 0});
  for (std::size_t i = 0; i < colls.size(); ++i) {
    const auto id = static_cast<std::int32_t>(i);
    ev.push_back({EventKind::Collective, step, id, colls[i].launch * kMs, colls[i].done * kMs, 1024});
    ev.push_back({EventKind::CollectiveExec, step, id, colls[i].start * kMs, colls[i].done * kMs, 1024});
  }
  ev.push_back({EventKind::CommWait, step, -1, wait_begin * kMs, wait_end * kMs, 0});
  return ev;
}

// The case the naive formula got wrong: five collectives launched together after backward ended
// (at 60 ms), executed FIFO, 8 ms each. Every instant of communication is exposed: overlap 0.
// The naive formula, 1 - exposed / Σ(completion - launch) = 1 - 40 / 120, said 66.7 %.
TEST(StepStatsOverlap, AllAfterBackwardIsZero) {
  std::vector<Coll> colls;
  for (std::int64_t i = 0; i < 5; ++i) colls.push_back({60, 60 + 8 * i, 68 + 8 * i});
  const auto ev = step_events(0, 100, 10, 60, colls, 60, 100);
  const StepStats s = step_stats(ev, 0);
  EXPECT_NEAR(s.comm_busy_ms, 40.0, kTol);
  EXPECT_NEAR(s.comm_queued_ms, 0.0 + 8 + 16 + 24 + 32, kTol);
  EXPECT_NEAR(s.comm_exposed_ms, 40.0, kTol);
  EXPECT_NEAR(s.comm_total_ms, 8.0 + 16 + 24 + 32 + 40, kTol);  // launch -> completion: exceeds the step
  EXPECT_GT(s.comm_total_ms, s.step_ms);
  EXPECT_LE(s.comm_busy_ms, s.step_ms);
  EXPECT_EQ(s.collectives, 5);
  EXPECT_EQ(s.comm_bytes, 5 * 1024);
  EXPECT_NEAR(s.overlap(), 0.0, kTol);
}

// Launched during backward (10..60 ms) at 20, 30, 40, FIFO 15 ms each: executing 20..65, the wait
// after backward 60..65. overlap = 1 - 5 / 45.
TEST(StepStatsOverlap, PartlyHidden) {
  const auto ev = step_events(0, 70, 10, 60, {{20, 20, 35}, {30, 35, 50}, {40, 50, 65}}, 60, 65);
  const StepStats s = step_stats(ev, 0);
  EXPECT_NEAR(s.comm_busy_ms, 45.0, kTol);
  EXPECT_NEAR(s.comm_queued_ms, 0.0 + 5 + 10, kTol);
  EXPECT_NEAR(s.overlap(), 1.0 - 5.0 / 45.0, 1e-12);
}

// Collectives executing concurrently (a backend with several in flight): the union counts shared
// instants once, so busy stays within the step while the sum does not.
TEST(StepStatsOverlap, BusyNeverExceedsTheStep) {
  const auto ev = step_events(0, 80, 0, 60, {{10, 10, 50}, {20, 20, 60}, {30, 30, 70}}, 60, 70);
  const StepStats s = step_stats(ev, 0);
  EXPECT_NEAR(s.comm_busy_ms, 60.0, kTol);  // 10 .. 70
  EXPECT_NEAR(s.comm_queued_ms, 0.0, kTol);
  EXPECT_NEAR(s.comm_total_ms, 120.0, kTol);
  EXPECT_LE(s.comm_busy_ms, s.step_ms);
  EXPECT_NEAR(s.overlap(), 1.0 - 10.0 / 60.0, 1e-12);
}

// ZeRO's parameter all-gathers start in the previous step's update and are waited for (and recorded)
// in this step's forward: only the part inside this step is this step's busy time.
TEST(StepStatsOverlap, BusyClippedToTheStep) {
  const auto ev = step_events(0, 100, 30, 80, {{-40, -30, 20}, {-35, 20, 25}, {40, 40, 70}}, 10, 25);
  const StepStats s = step_stats(ev, 0);
  EXPECT_NEAR(s.comm_busy_ms, 25.0 + 30.0, kTol);  // 0 .. 25 and 40 .. 70; not -30 .. 0
  EXPECT_LE(s.comm_busy_ms, s.step_ms);
  EXPECT_NEAR(s.overlap(), 1.0 - 15.0 / 55.0, 1e-12);
}

// Only the asked step's events count, and the summary carries the new fields.
TEST(StepStatsOverlap, OtherStepsIgnoredAndSummarized) {
  auto ev = step_events(0, 100, 10, 60, {{60, 60, 100}}, 60, 100);
  const auto ev1 = step_events(1, 100, 10, 60, {{20, 30, 50}}, 60, 60);
  ev.insert(ev.end(), ev1.begin(), ev1.end());
  const StepStats s0 = step_stats(ev, 0), s1 = step_stats(ev, 1);
  EXPECT_NEAR(s0.comm_busy_ms, 40.0, kTol);
  EXPECT_NEAR(s0.overlap(), 0.0, kTol);
  EXPECT_NEAR(s1.comm_busy_ms, 20.0, kTol);
  EXPECT_NEAR(s1.comm_queued_ms, 10.0, kTol);
  EXPECT_NEAR(s1.overlap(), 1.0, kTol);
  const RunSummary sum = summarize({s0, s1});
  EXPECT_NEAR(sum.mean.comm_busy_ms, 30.0, kTol);
  EXPECT_NEAR(sum.mean.comm_queued_ms, 5.0, kTol);
}

}  // namespace
}  // namespace microddp::perf
