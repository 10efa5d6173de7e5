// test_optimizer_math.cpp — adam_update / sgd_update (elementwise.hpp) against values worked out by
// hand, step by step, for Adam, AdamW, Adam + L2, SGD, SGD + weight decay, momentum and Nesterov.
// Every case starts from p = 1 and feeds the gradients 0.5, -1, 0.25 with lr = 0.1. The arithmetic
// is written beside each expected number so a reader can redo it. The same formulas run in CpuOps'
// fused passes (checked elementwise in test_cpu_ops.cpp) and in the CUDA kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/elementwise.hpp"
#include "kernels/ops.hpp"
#include "kernels/optimizer_kernels.hpp"

namespace microddp::kernels {
namespace {

// ---- Adam family ---------------------------------------------------------------------------------
// beta1 = 0.9, beta2 = 0.999, eps = 1e-8. Bias corrections bc1 = 1 - 0.9^t, bc2 = 1 - 0.999^t:
//   t = 1: bc1 = 0.1,   bc2 = 0.001
//   t = 2: bc1 = 0.19,  bc2 = 0.001999
//   t = 3: bc1 = 0.271, bc2 = 0.002997001
// Tolerances: 0.999 is not a float; 1 - 0.999f = 9.9998713e-4 is 1.3e-5 relative off 0.001, so v (and
// v_hat) are ~1.3e-5 relative off the hand values, sqrt(v_hat) ~6.4e-6, and p moves by at most
// lr * |m_hat / sqrt(v_hat)| * 6.4e-6 < 0.1 * 1 * 6.4e-6 = 6.4e-7. Float rounding of the ~10 operations
// adds ~1e-7. Hence 2e-5 relative on m, v and 1e-6 absolute on p (values ~1).
constexpr float kBc1[] = {0.1f, 0.19f, 0.271f};
constexpr float kBc2[] = {0.001f, 0.001999f, 0.002997001f};
constexpr float kGrads[] = {0.5f, -1.0f, 0.25f};

struct AdamExpect {
  double m, v, p;
};

void run_adam(AdamParams a, const AdamExpect (&want)[3]) {
  float p = 1.0f, m = 0.0f, v = 0.0f;
  for (int t = 0; t < 3; ++t) {
    a.bias_correction1 = kBc1[t];
    a.bias_correction2 = kBc2[t];
    adam_update(a, p, kGrads[t], m, v);
    EXPECT_NEAR(m, want[t].m, 2e-5 * std::abs(want[t].m)) << "step " << t + 1;
    EXPECT_NEAR(v, want[t].v, 2e-5 * std::abs(want[t].v)) << "step " << t + 1;
    EXPECT_NEAR(p, want[t].p, 1e-6) << "step " << t + 1;
  }
}

TEST(OptimizerMath, Adam) {
  AdamParams a;
  a.lr = 0.1f;
  const AdamExpect want[3] = {
      // t=1, g=0.5:  m = 0.1*0.5 = 0.05;  v = 0.001*0.25 = 0.00025
      //   m_hat = 0.05/0.1 = 0.5;  v_hat = 0.00025/0.001 = 0.25;  sqrt = 0.5
      //   p = 1 - 0.1*0.5/(0.5 + 1e-8) = 1 - 0.099999998 = 0.900000002
      {0.05, 0.00025, 0.900000002},
      // t=2, g=-1:   m = 0.9*0.05 + 0.1*(-1) = -0.055;  v = 0.999*0.00025 + 0.001*1 = 0.00124975
      //   m_hat = -0.055/0.19 = -0.289473684;  v_hat = 0.00124975/0.001999 = 0.625187594; sqrt = 0.790688051
      //   p = 0.900000002 + 0.1*0.289473684/0.790688051 = 0.900000002 + 0.036610352 = 0.936610354
      {-0.055, 0.00124975, 0.936610354},
      // t=3, g=0.25: m = 0.9*(-0.055) + 0.1*0.25 = -0.0245;  v = 0.999*0.00124975 + 0.001*0.0625 = 0.00131100025
      //   m_hat = -0.0245/0.271 = -0.090405904;  v_hat = 0.00131100025/0.002997001 = 0.437437375; sqrt = 0.661390486
      //   p = 0.936610354 + 0.1*0.090405904/0.661390486 = 0.936610354 + 0.013669066 = 0.950279420
      {-0.0245, 0.00131100025, 0.950279420},
  };
  run_adam(a, want);
}

TEST(OptimizerMath, AdamW) {
  // Decoupled decay: p -= lr*wd*p (= 0.01 p) BEFORE the Adam step; m and v as for plain Adam.
  AdamParams a;
  a.lr = 0.1f;
  a.weight_decay = 0.1f;
  a.decoupled = true;
  const AdamExpect want[3] = {
      // t=1: p = 1*(1 - 0.01) = 0.99;  p -= 0.099999998 (as Adam)          -> 0.890000002
      {0.05, 0.00025, 0.890000002},
      // t=2: p = 0.890000002*0.99 = 0.881100002;  p += 0.036610352          -> 0.917710354
      {-0.055, 0.00124975, 0.917710354},
      // t=3: p = 0.917710354*0.99 = 0.908533251;  p += 0.013669066          -> 0.922202317
      {-0.0245, 0.00131100025, 0.922202317},
  };
  run_adam(a, want);
}

TEST(OptimizerMath, AdamWithL2) {
  // Coupled (classic) L2: g += wd*p before the moments; wd = 0.1. Two steps.
  AdamParams a;
  a.lr = 0.1f;
  a.weight_decay = 0.1f;
  a.decoupled = false;
  float p = 1.0f, m = 0.0f, v = 0.0f;
  // t=1: g = 0.5 + 0.1*1 = 0.6;  m = 0.06;  v = 0.001*0.36 = 0.00036;  m_hat = 0.6, v_hat = 0.36, sqrt = 0.6
  //      p = 1 - 0.1*0.6/(0.6 + 1e-8) = 0.900000002
  a.bias_correction1 = kBc1[0];
  a.bias_correction2 = kBc2[0];
  adam_update(a, p, 0.5f, m, v);
  EXPECT_NEAR(m, 0.06, 2e-5 * 0.06);
  EXPECT_NEAR(v, 0.00036, 2e-5 * 0.00036);
  EXPECT_NEAR(p, 0.900000002, 1e-6);
  // t=2: g = -1 + 0.1*0.900000002 = -0.909999999;  m = 0.9*0.06 + 0.1*(-0.91) = -0.037
  //      v = 0.999*0.00036 + 0.001*0.8281 = 0.00118774;  m_hat = -0.037/0.19 = -0.194736842
  //      v_hat = 0.00118774/0.001999 = 0.594167083; sqrt = 0.770822342
  //      p = 0.900000002 + 0.1*0.194736842/0.770822342 = 0.900000002 + 0.025263518 = 0.925263519
  a.bias_correction1 = kBc1[1];
  a.bias_correction2 = kBc2[1];
  adam_update(a, p, -1.0f, m, v);
  EXPECT_NEAR(m, -0.037, 2e-5 * 0.037);
  EXPECT_NEAR(v, 0.00118774, 2e-5 * 0.00118774);
  EXPECT_NEAR(p, 0.925263519, 1e-6);
}

TEST(OptimizerMath, AdamFusedPassMatchesHandValues) {
  // The same Adam case through the CPU optimizer kernels' adam_step on 3 elements (one with g = 0
  // stays put: m = v = 0, update 0/(0 + eps) = 0).
  auto ops = make_cpu_ops(1);
  auto opt_kernels = make_optimizer_kernels(*ops);
  AdamParams a;
  a.lr = 0.1f;
  std::vector<float> p = {1.0f, 1.0f, -2.0f}, m(3, 0.0f), v(3, 0.0f);
  const double want_p[3] = {0.900000002, 0.936610354, 0.950279420};
  for (int t = 0; t < 3; ++t) {
    a.bias_correction1 = kBc1[t];
    a.bias_correction2 = kBc2[t];
    // Element 1 gets -g: by symmetry its p moves by the same amount the other way: 2 - p_elem0.
    const std::vector<float> g = {kGrads[t], -kGrads[t], 0.0f};
    opt_kernels->adam_step(a, p.data(), g.data(), m.data(), v.data(), 3, nullptr);
    EXPECT_NEAR(p[0], want_p[t], 1e-6) << "step " << t + 1;
    EXPECT_NEAR(p[1], 2.0 - want_p[t], 1e-6) << "step " << t + 1;
    EXPECT_EQ(p[2], -2.0f) << "step " << t + 1;
  }
}

// ---- SGD family ----------------------------------------------------------------------------------
// Tolerance: every number below has at most 7 significant digits and is a handful of float ops from
// exact decimals; float's relative precision 6e-8 on values ~1 gives < 3e-7 absolute. We use 1e-6.
struct SgdExpect {
  double p, buf;
};

void run_sgd(const SgdParams& s, const SgdExpect (&want)[3]) {
  float p = 1.0f, buf = 0.0f;
  for (int t = 0; t < 3; ++t) {
    sgd_update(s, p, kGrads[t], buf);
    EXPECT_NEAR(p, want[t].p, 1e-6) << "step " << t + 1;
    EXPECT_NEAR(buf, want[t].buf, 1e-6) << "step " << t + 1;
  }
}

TEST(OptimizerMath, PlainSgd) {
  SgdParams s;
  s.lr = 0.1f;
  // buf untouched (stays 0) without momentum.
  // p = 1 - 0.1*0.5 = 0.95;  0.95 + 0.1*1 = 1.05;  1.05 - 0.1*0.25 = 1.025
  run_sgd(s, {{0.95, 0.0}, {1.05, 0.0}, {1.025, 0.0}});
}

TEST(OptimizerMath, SgdWeightDecay) {
  SgdParams s;
  s.lr = 0.1f;
  s.weight_decay = 0.01f;
  // t=1: g = 0.5 + 0.01*1 = 0.51;            p = 1 - 0.051 = 0.949
  // t=2: g = -1 + 0.01*0.949 = -0.99051;     p = 0.949 + 0.099051 = 1.048051
  // t=3: g = 0.25 + 0.01*1.048051 = 0.26048051;  p = 1.048051 - 0.026048051 = 1.022002949
  run_sgd(s, {{0.949, 0.0}, {1.048051, 0.0}, {1.022002949, 0.0}});
}

TEST(OptimizerMath, SgdMomentum) {
  SgdParams s;
  s.lr = 0.1f;
  s.momentum = 0.9f;
  // buf = 0.9*buf + g (first step buf = g), step with buf:
  // t=1: buf = 0.5;                    p = 1 - 0.05 = 0.95
  // t=2: buf = 0.45 - 1 = -0.55;       p = 0.95 + 0.055 = 1.005
  // t=3: buf = -0.495 + 0.25 = -0.245; p = 1.005 + 0.0245 = 1.0295
  run_sgd(s, {{0.95, 0.5}, {1.005, -0.55}, {1.0295, -0.245}});
}

TEST(OptimizerMath, SgdNesterov) {
  SgdParams s;
  s.lr = 0.1f;
  s.momentum = 0.9f;
  s.nesterov = true;
  // buf as for momentum; the step uses g + 0.9*buf:
  // t=1: buf = 0.5;    step = 0.5 + 0.45 = 0.95;         p = 1 - 0.095 = 0.905
  // t=2: buf = -0.55;  step = -1 - 0.495 = -1.495;       p = 0.905 + 0.1495 = 1.0545
  // t=3: buf = -0.245; step = 0.25 - 0.2205 = 0.0295;    p = 1.0545 - 0.00295 = 1.05155
  run_sgd(s, {{0.905, 0.5}, {1.0545, -0.55}, {1.05155, -0.245}});
}

}  // namespace
}  // namespace microddp::kernels
