// test_lr_schedule.cpp — the learning-rate schedules against their closed forms, with numbers
// computed by hand (Python's math module, float64), and the optimizer's use of the rate.
//
// The reference formulas are torch.optim.lr_scheduler's closed forms, shifted by the warmup:
//   CosineAnnealingLR(T_max = D - W, eta_min = min):  min + (base - min) (1 + cos(pi t / T_max)) / 2
//     base 0.1, min 0.01, W 2, D 10:  t = s - 2;  s = 3 -> 0.0965745789630079, s = 6 -> 0.055,
//     s = 9 -> 0.013425421036992097, s >= 10 -> 0.01
//   LinearLR to end factor min / base over D - W steps:  base 0.1 -> 0, D 10: s = 5 -> 0.05, s = 9 -> 0.01
//   MultiStepLR(milestones [3, 6], gamma 0.5): s = 2 -> 0.1, s = 3 -> 0.05, s = 6 -> 0.025
//   warmup (llm.c's): base (s + 1) / W: base 0.1, W 4: 0.025, 0.05, 0.075, 0.1
// The schedule rounds the float64 value to float once, so each expectation is that float.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "kernels/ops.hpp"
#include "model/lr_schedule.hpp"
#include "model/optimizer.hpp"

namespace microddp::model {
namespace {

LrScheduleConfig config(LrScheduleKind k, std::int64_t warmup, float min_lr, std::int64_t decay,
                        const char* milestones = "", float gamma = 0.1f) {
  LrScheduleConfig c;
  c.kind = k;
  c.warmup_steps = warmup;
  c.min_lr = min_lr;
  c.decay_steps = decay;
  c.milestones = milestones;
  c.gamma = gamma;
  return c;
}

TEST(LrSchedule, ConstantIsTheBaseRateBitForBit) {
  const LrSchedule s(0.1f, LrScheduleConfig{});
  EXPECT_TRUE(s.is_constant());
  for (std::int64_t i : {std::int64_t{0}, std::int64_t{1}, std::int64_t{1000}, std::int64_t{1} << 40}) EXPECT_EQ(s.lr(i), 0.1f);
}

TEST(LrSchedule, WarmupIsLinearFromTheFirstStep) {
  const LrSchedule s(0.1f, config(LrScheduleKind::Constant, 4, 0, 0));
  EXPECT_FALSE(s.is_constant());
  const float want[] = {0.025f, 0.05f, 0.075f, 0.1f, 0.1f, 0.1f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(s.lr(i), want[i]) << "step index " << i;
}

TEST(LrSchedule, CosineMatchesTheClosedForm) {
  const LrSchedule s(0.1f, config(LrScheduleKind::Cosine, 2, 0.01f, 10));
  const std::pair<std::int64_t, double> want[] = {{0, 0.05},  {1, 0.1},  {2, 0.1},
                                                  {3, 0.0965745789630079},
                                                  {6, 0.055}, {9, 0.013425421036992097},
                                                  {10, 0.01}, {50, 0.01}};
  for (const auto& [i, v] : want) EXPECT_EQ(s.lr(i), static_cast<float>(v)) << "step index " << i;
}

TEST(LrSchedule, LinearMatchesTheClosedForm) {
  const LrSchedule s(0.1f, config(LrScheduleKind::Linear, 0, 0.0f, 10));
  const std::pair<std::int64_t, double> want[] = {{0, 0.1}, {5, 0.05}, {9, 0.010000000000000009}, {10, 0.0}, {11, 0.0}};
  for (const auto& [i, v] : want) EXPECT_EQ(s.lr(i), static_cast<float>(v)) << "step index " << i;
}

TEST(LrSchedule, StepMultipliesAtEachMilestone) {
  const LrSchedule s(0.1f, config(LrScheduleKind::Step, 0, 0, 0, "3,6", 0.5f));
  const std::pair<std::int64_t, double> want[] = {{0, 0.1}, {2, 0.1}, {3, 0.05}, {5, 0.05}, {6, 0.025}, {99, 0.025}};
  for (const auto& [i, v] : want) EXPECT_EQ(s.lr(i), static_cast<float>(v)) << "step index " << i;
}

TEST(LrSchedule, InvalidCombinationsAreUsageErrors) {
  EXPECT_THROW(LrSchedule(0.1f, config(LrScheduleKind::Cosine, 10, 0, 10)), core::UsageError);  // D <= W
  EXPECT_THROW(LrSchedule(0.1f, config(LrScheduleKind::Linear, 0, 0.2f, 10)), core::UsageError);  // min > base
  EXPECT_THROW(LrSchedule(0.1f, config(LrScheduleKind::Step, 0, 0, 0, "")), core::UsageError);
  EXPECT_THROW(LrSchedule(0.1f, config(LrScheduleKind::Step, 0, 0, 0, "6,3")), core::UsageError);
  EXPECT_THROW(LrSchedule(0.1f, config(LrScheduleKind::Step, 0, 0, 0, "3,x")), core::UsageError);
  EXPECT_THROW(LrSchedule(0.1f, config(LrScheduleKind::Step, 0, 0, 0, "3", 0.0f)), core::UsageError);
  EXPECT_THROW(parse_lr_schedule("exponential"), core::UsageError);
  EXPECT_EQ(parse_milestones("5,10,200", "--lr-milestones"), (std::vector<std::int64_t>{5, 10, 200}));
}

// The optimizer takes the rate it is given: SGD without momentum moves by exactly lr x gradient.
TEST(LrSchedule, OptimizerUsesTheRateSetBeforeTheStep) {
  auto ops = kernels::make_cpu_ops(1);
  OptimizerConfig oc;
  oc.name = "sgd";
  oc.lr = 0.5f;
  auto sgd = make_optimizer(oc, 2, *ops);
  float p[2] = {1.0f, 1.0f};
  const float g[2] = {1.0f, 2.0f};
  sgd->step(p, g);  // the configuration's rate until set
  EXPECT_EQ(p[0], 0.5f);
  EXPECT_EQ(p[1], 0.0f);
  sgd->set_lr(0.25f);
  sgd->step(p, g);
  EXPECT_EQ(p[0], 0.25f);
  EXPECT_EQ(p[1], -0.5f);
}

}  // namespace
}  // namespace microddp::model
