// test_optimizer.cpp — the optimizer classes (bias correction, step counting, dispatch) against
// values computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/elementwise.hpp"
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

// The gated step (the optimizer inside the step's CUDA graph) against step(): per step, the host
// stages the scalars, the "device" gate is made from a verdict's numbers (clip factor, skip), and the
// host commits unless skipped. The same gradients must give the same bits as the eager sequence
// clip-scale + step(), skipped steps must leave parameters, state and step count untouched, and the
// step after a skip must use the right bias corrections. CpuOps runs the gated calls at once.
TEST(Optimizer, GatedStepIsTheEagerStepAndSkipsOnTheGate) {
  auto ops = kernels::make_cpu_ops(1);
  constexpr std::int64_t kN = 37;
  constexpr double kMaxNorm = 0.8;
  for (const char* name : {"adam", "adamw", "sgd"}) {
    OptimizerConfig c;
    c.name = name;
    c.lr = 0.05f;
    c.weight_decay = 0.01f;
    c.momentum = std::string(name) == "sgd" ? 0.9f : 0.0f;
    auto eager = make_optimizer(c, kN, *ops);
    auto gated = make_optimizer(c, kN, *ops);
    std::vector<float> pe(kN), pg(kN);
    for (std::int64_t i = 0; i < kN; ++i) pe[i] = pg[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
    for (int s = 0; s < 6; ++s) {
      std::vector<float> grad(kN);
      double sumsq = 0.0;
      for (std::int64_t i = 0; i < kN; ++i) {
        grad[i] = std::sin(0.37f * static_cast<float>(i + 11 * s)) * (s == 2 ? 3.0f : 0.2f);  // step 2 clips
        sumsq += static_cast<double>(grad[i]) * grad[i];
      }
      const bool skip = s == 3;  // the verdict saw a non-finite gradient on some rank
      kernels::StepNumerics numerics;
      numerics.agreed = {0.5, 0.0, skip ? 1.0 : 0.0};
      numerics.grad_sum_squares = sumsq;
      // Eager: the trainer's host decisions.
      std::vector<float> ge = grad;
      if (!skip) {
        const double clip = kernels::clip_factor(std::sqrt(sumsq), kMaxNorm);
        if (clip < 1.0) ops->scale(ge.data(), static_cast<float>(clip), kN);
        eager->step(pe.data(), ge.data());
      }
      // Gated: staged, decided from the numbers, committed only when taken.
      std::vector<float> gg = grad;
      kernels::UpdateGate gate;
      gated->stage_gated_step();
      gated->kernels().update_gate(&numerics, kMaxNorm, &gate);
      EXPECT_EQ(gate.skip, skip ? 1 : 0);
      gated->kernels().scale_gated(gg.data(), &gate, kN);
      gated->queue_gated_step(pg.data(), gg.data(), &gate);
      if (!skip) gated->commit_gated_step();
      EXPECT_EQ(gated->steps_taken(), eager->steps_taken()) << name << " step " << s;
      EXPECT_EQ(std::memcmp(pe.data(), pg.data(), kN * sizeof(float)), 0) << name << " step " << s;
      if (s == 2) {
        EXPECT_LT(gate.clip, 1.0f) << "the clipping step must clip";
      }
    }
    auto se = eager->state_buffers(), sg = gated->state_buffers();
    ASSERT_EQ(se.size(), sg.size());
    for (std::size_t b = 0; b < se.size(); ++b)
      EXPECT_EQ(std::memcmp(se[b].data, sg[b].data, kN * sizeof(float)), 0) << name << " " << se[b].name;
  }
}

TEST(Optimizer, UpdateGateIsTheHostsClipFactorAndNanPolicy) {
  const kernels::StepNumerics grad_bad{{1.0, 0.0, 2.0}, 4.0, {}}, loss_bad{{1.0, 1.0, 0.0}, 4.0, {}};
  EXPECT_EQ(kernels::update_gate(grad_bad, 0.0).skip, 1);
  EXPECT_EQ(kernels::update_gate(loss_bad, 0.0).skip, 1);
  const kernels::StepNumerics ok{{1.0, 0.0, 0.0}, 4.0, {}};  // norm 2
  EXPECT_EQ(kernels::update_gate(ok, 0.0).skip, 0);
  EXPECT_EQ(kernels::update_gate(ok, 0.0).clip, 1.0f) << "max_norm 0: no clipping";
  EXPECT_EQ(kernels::update_gate(ok, 5.0).clip, 1.0f);
  EXPECT_EQ(kernels::update_gate(ok, 1.0).clip, static_cast<float>(1.0 / (2.0 + 1e-6)));
}

TEST(Optimizer, UnknownNameIsUsageError) {
  auto ops = kernels::make_cpu_ops(1);
  OptimizerConfig c;
  c.name = "lamb";
  EXPECT_THROW(make_optimizer(c, 4, *ops), core::UsageError);
}

}  // namespace
}  // namespace microddp::model
