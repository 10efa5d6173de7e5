// test_optimizer.cpp — the optimizer classes (bias correction, step counting, dispatch) against
// values computed by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "kernels/ops.hpp"
#include "model/optimizer.hpp"

namespace microddp::model {
namespace {

TEST(Adam, TwoStepsMatchHandComputedValues) {
  auto ops = kernels::make_cpu_ops(1);
  OptimizerConfig c;  // lr 1e-3, betas 0.9/0.999, eps 1e-8
  auto adam = make_optimizer(c, 1, *ops);
  float p = 1.0f;
  float g = 0.5f;
  adam->step(&p, &g);
  // step 1: m = 0.05, v = 0.00025; m_hat = 0.05/0.1 = 0.5; v_hat = 0.00025/0.001 = 0.25
  //         p = 1 - 1e-3 * 0.5 / (0.5 + 1e-8) = 0.999 (to float precision)
  EXPECT_NEAR(p, 0.999f, 1e-7f);
  g = -1.0f;
  adam->step(&p, &g);
  // step 2: m = 0.9*0.05 - 0.1 = -0.055; v = 0.999*0.00025 + 0.001 = 0.00124975
  //         m_hat = -0.055/0.19 = -0.289473684; v_hat = 0.00124975/0.001999 = 0.625187594
  //         p = 0.999 + 1e-3 * 0.289473684 / 0.790688...= 0.999 + 0.000366102 = 0.999366102
  EXPECT_NEAR(p, 0.999366102f, 2e-7f);  // float32 ulp at 1.0 is 1.2e-7
  EXPECT_EQ(adam->steps_taken(), 2);
}

TEST(AdamW, DecoupledWeightDecay) {
  auto ops = kernels::make_cpu_ops(1);
  OptimizerConfig c;
  c.name = "adamw";
  c.lr = 0.1f;
  c.weight_decay = 0.5f;
  auto opt = make_optimizer(c, 1, *ops);
  float p = 2.0f, g = 0.0f;
  opt->step(&p, &g);
  // g = 0: m = v = 0, Adam term 0/(0+eps) = 0; decay p -= lr*wd*p = 2 - 0.1 = 1.9
  EXPECT_FLOAT_EQ(p, 1.9f);
}

TEST(Sgd, MomentumTwoSteps) {
  auto ops = kernels::make_cpu_ops(1);
  OptimizerConfig c;
  c.name = "sgd";
  c.lr = 0.1f;
  c.momentum = 0.9f;
  auto opt = make_optimizer(c, 1, *ops);
  float p = 1.0f, g = 1.0f;
  opt->step(&p, &g);  // buf = 1, p = 1 - 0.1 = 0.9
  EXPECT_FLOAT_EQ(p, 0.9f);
  opt->step(&p, &g);  // buf = 0.9 + 1 = 1.9, p = 0.9 - 0.19 = 0.71
  EXPECT_FLOAT_EQ(p, 0.71f);
}

TEST(Optimizer, UnknownNameIsUsageError) {
  auto ops = kernels::make_cpu_ops(1);
  OptimizerConfig c;
  c.name = "lamb";
  EXPECT_THROW(make_optimizer(c, 4, *ops), core::UsageError);
}

}  // namespace
}  // namespace microddp::model
