// test_mlp.cpp — FullMLP against an independent float64 reference.
//   * layout: gradient-ready order b_L, W_L, ..., b_0, W_0, contiguous, covering the flat buffer
//   * initialisation: a pure function of (seed, parameter, element)
//   * backward: the float model's gradients equal a float64 reference's analytic gradients, and
//     those in turn equal central finite differences of the float64 loss
//   * grad_ready fires once per parameter, in layout order, after that gradient is final
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.hpp"
#include "kernels/ops.hpp"
#include "kernels/elementwise.hpp"
#include "model/mlp.hpp"
#include "model/optimizer.hpp"

namespace microddp::model {
namespace {

// float64 reference of the same network: forward + analytic backward, written independently of
// the kernels (plain loops).
struct RefMlp {
  MlpConfig cfg;
  std::vector<ParamInfo> infos;
  std::vector<double> params;
  // --precision bf16's arithmetic: every GEMM operand (each layer's input, its weight, the upstream
  // gradient) rounded to bfloat16 (via float, nearest-even), everything else in float64.
  bool bf16 = false;

  double q(double v) const {
    if (!bf16) return v;
    const float f = static_cast<float>(v);
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    u = ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) << 16;
    float r;
    std::memcpy(&r, &u, sizeof r);
    return r;
  }

  double loss_and_grad(const std::vector<double>& x, const std::vector<int>& y, std::int64_t rows, double scale,
                       std::vector<double>* grad) const {
    const std::int64_t L = cfg.depth;
    std::vector<std::vector<double>> acts(static_cast<std::size_t>(L + 2));
    acts[0] = x;
    auto W = [&](std::int64_t l) {
      return &params[static_cast<std::size_t>(infos[static_cast<std::size_t>(2 * (L - l) + 1)].offset)];
    };
    auto B = [&](std::int64_t l) {
      return &params[static_cast<std::size_t>(infos[static_cast<std::size_t>(2 * (L - l))].offset)];
    };
    auto in_f = [&](std::int64_t l) { return l == 0 ? cfg.in_dim : cfg.width; };
    auto out_f = [&](std::int64_t l) { return l == L ? cfg.classes : cfg.width; };
    for (std::int64_t l = 0; l <= L; ++l) {
      const std::int64_t in = in_f(l), out = out_f(l);
      auto& a = acts[static_cast<std::size_t>(l + 1)];
      a.assign(static_cast<std::size_t>(rows * out), 0.0);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t o = 0; o < out; ++o) {
          double s = B(l)[o];
          for (std::int64_t i = 0; i < in; ++i)
            s += q(acts[static_cast<std::size_t>(l)][static_cast<std::size_t>(r * in + i)]) * q(W(l)[o * in + i]);
          a[static_cast<std::size_t>(r * out + o)] = (l < L) ? std::max(0.0, s) : s;
        }
    }
    const auto& logits = acts[static_cast<std::size_t>(L + 1)];
    const std::int64_t C = cfg.classes;
    double loss = 0.0;
    std::vector<double> dy(static_cast<std::size_t>(rows * C));
    for (std::int64_t r = 0; r < rows; ++r) {
      double mx = logits[static_cast<std::size_t>(r * C)];
      for (std::int64_t c = 1; c < C; ++c) mx = std::max(mx, logits[static_cast<std::size_t>(r * C + c)]);
      double z = 0.0;
      for (std::int64_t c = 0; c < C; ++c) z += std::exp(logits[static_cast<std::size_t>(r * C + c)] - mx);
      loss += scale * (std::log(z) + mx - logits[static_cast<std::size_t>(r * C + y[static_cast<std::size_t>(r)])]);
      for (std::int64_t c = 0; c < C; ++c)
        dy[static_cast<std::size_t>(r * C + c)] =
            scale * (std::exp(logits[static_cast<std::size_t>(r * C + c)] - mx) / z -
                     (c == y[static_cast<std::size_t>(r)] ? 1.0 : 0.0));
    }
    if (!grad) return loss;
    grad->assign(params.size(), 0.0);
    for (std::int64_t l = L; l >= 0; --l) {
      const std::int64_t in = in_f(l), out = out_f(l);
      double* gW = &(*grad)[static_cast<std::size_t>(infos[static_cast<std::size_t>(2 * (L - l) + 1)].offset)];
      double* gB = &(*grad)[static_cast<std::size_t>(infos[static_cast<std::size_t>(2 * (L - l))].offset)];
      const auto& a_in = acts[static_cast<std::size_t>(l)];
      std::vector<double> dx(static_cast<std::size_t>(rows * in), 0.0);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t o = 0; o < out; ++o) {
          const double d = dy[static_cast<std::size_t>(r * out + o)];
          gB[o] += d;
          for (std::int64_t i = 0; i < in; ++i) {
            gW[o * in + i] += q(d) * q(a_in[static_cast<std::size_t>(r * in + i)]);
            dx[static_cast<std::size_t>(r * in + i)] += q(d) * q(W(l)[o * in + i]);
          }
        }
      if (l > 0)
        for (std::size_t k = 0; k < dx.size(); ++k) dx[k] = a_in[k] > 0.0 ? dx[k] : 0.0;
      dy = std::move(dx);
    }
    return loss;
  }
};

TEST(FullMLP, LayoutFollowsGradientReadyOrderAlignedTo256Bytes) {
  auto ops = kernels::make_cpu_ops(1);
  MlpConfig cfg{5, 7, 3, 4};
  FullMLP m(cfg, 3, *ops);
  const auto& p = m.params();
  ASSERT_EQ(p.size(), 2u * 4u);
  // Every parameter starts at the first 256-byte boundary after the previous one ends.
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i].index, static_cast<int>(i));
    EXPECT_EQ(p[i].offset, offset) << p[i].name;
    EXPECT_EQ(p[i].offset % 64, 0) << p[i].name;  // 64 floats = 256 bytes
    offset += (p[i].count + 63) / 64 * 64;
    EXPECT_EQ(p[i].layer, 3 - static_cast<int>(i / 2));
    EXPECT_EQ(p[i].is_bias, i % 2 == 0);
  }
  EXPECT_EQ(offset, m.flat_count());
  EXPECT_EQ(m.flat_count(), 8 * 64);         // every parameter here fits in one 64-float block
  EXPECT_EQ(m.params(), param_layout(cfg));  // the model's layout is the one definition
  EXPECT_EQ(p[0].name, "layer_03.bias");
  EXPECT_EQ(p[1].name, "layer_03.weight");
  EXPECT_EQ(p[1].rows, 4);
  EXPECT_EQ(p[1].cols, 7);
  EXPECT_EQ(p.back().name, "layer_00.weight");
  EXPECT_EQ(p.back().cols, 5);
  // 5*7+7 + 2*(7*7+7) + 7*4+4
  EXPECT_EQ(m.parameter_count(), 42 + 112 + 32);
}

TEST(FullMLP, InitIsAPureFunctionOfSeedParameterElement) {
  auto ops = kernels::make_cpu_ops(1);
  MlpConfig cfg{6, 8, 2, 3};
  FullMLP a(cfg, 4, *ops), b(cfg, 9, *ops), c(cfg, 4, *ops);
  a.init(42);
  b.init(42);
  c.init(43);
  for (std::int64_t i = 0; i < a.flat_count(); ++i) ASSERT_EQ(a.param_data()[i], b.param_data()[i]);
  int differ = 0;
  for (std::int64_t i = 0; i < a.flat_count(); ++i) differ += a.param_data()[i] != c.param_data()[i];
  EXPECT_GT(differ, a.parameter_count() / 2);  // most weights differ (biases and padding are 0 for both)
  // Element e of parameter p is std * normal01(seed, p, e), independent of everything else.
  const ParamInfo& w = a.weight(0);
  const float std_dev = std::sqrt(2.0f / 6.0f);
  EXPECT_EQ(a.param_data()[w.offset + 5], std_dev * core::normal01(42, static_cast<std::uint64_t>(w.index), 5));
  const ParamInfo& bias = a.bias(1);
  for (std::int64_t i = 0; i < bias.count; ++i) EXPECT_EQ(a.param_data()[bias.offset + i], 0.0f);
}

class MlpGradient : public ::testing::TestWithParam<MlpConfig> {};

TEST_P(MlpGradient, MatchesFloat64ReferenceAndFiniteDifferences) {
  const MlpConfig cfg = GetParam();
  const std::int64_t rows = 5;
  auto ops = kernels::make_cpu_ops(1);
  FullMLP m(cfg, rows, *ops);
  m.init(7);
  // Non-zero biases so the bias paths are exercised.
  for (const auto& p : m.params())
    if (p.is_bias)
      for (std::int64_t i = 0; i < p.count; ++i)
        m.param_data()[p.offset + i] =
            0.1f * core::normal01(9, static_cast<std::uint64_t>(p.index), static_cast<std::uint64_t>(i));
  std::vector<float> x(static_cast<std::size_t>(rows * cfg.in_dim));
  std::vector<std::int32_t> y(static_cast<std::size_t>(rows));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = core::normal01(3, 1, i);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<std::int32_t>(i % static_cast<std::size_t>(cfg.classes));
  const float scale = 1.0f / 8.0f;  // a "global batch" of 8 of which this process holds 5 rows

  // Poison the gradient buffer: zero_grad must clear it.
  for (std::int64_t i = 0; i < m.flat_count(); ++i) m.grad_data()[i] = 1e30f;
  m.zero_grad();
  std::vector<int> ready_order;
  m.forward(x.data(), rows);
  const double loss = m.backward(y.data(), scale, [&](const ParamInfo& p) { ready_order.push_back(p.index); });

  RefMlp ref{cfg, m.params(), std::vector<double>(m.param_data(), m.param_data() + m.flat_count())};
  std::vector<double> xd(x.begin(), x.end());
  std::vector<int> yd(y.begin(), y.end());
  std::vector<double> g;
  const double ref_loss = ref.loss_and_grad(xd, yd, rows, scale, &g);
  // float32 forward of a few layers: relative error ~ depth * width * 2^-24; 1e-5 leaves margin.
  EXPECT_NEAR(loss, ref_loss, 1e-5 * std::abs(ref_loss));

  double gmax = 0.0;
  for (double v : g) gmax = std::max(gmax, std::abs(v));
  for (std::int64_t i = 0; i < m.flat_count(); ++i) {
    // float32 backprop vs float64: errors scale with the largest gradient, ~1e-6 relative here;
    // 1e-4 of the largest gradient catches any wrong index or missing term.
    ASSERT_NEAR(m.grad_data()[i], g[static_cast<std::size_t>(i)], 1e-4 * gmax) << "parameter element " << i;
  }
  // Central differences of the float64 loss (h = 1e-6: truncation ~h^2, rounding ~1e-16/h).
  for (std::int64_t i = 0; i < m.flat_count(); i += std::max<std::int64_t>(1, m.flat_count() / 97)) {
    RefMlp p = ref;
    const double h = 1e-6;
    p.params[static_cast<std::size_t>(i)] += h;
    const double lp = p.loss_and_grad(xd, yd, rows, scale, nullptr);
    p.params[static_cast<std::size_t>(i)] -= 2 * h;
    const double lm = p.loss_and_grad(xd, yd, rows, scale, nullptr);
    EXPECT_NEAR((lp - lm) / (2 * h), g[static_cast<std::size_t>(i)], 1e-6 + 1e-5 * gmax) << "element " << i;
  }
  // grad_ready: every parameter exactly once, in layout (= gradient-ready) order.
  ASSERT_EQ(ready_order.size(), m.params().size());
  for (std::size_t i = 0; i < ready_order.size(); ++i) EXPECT_EQ(ready_order[i], static_cast<int>(i));
}

INSTANTIATE_TEST_SUITE_P(Shapes, MlpGradient,
                         ::testing::Values(MlpConfig{4, 6, 1, 2}, MlpConfig{5, 7, 3, 3}, MlpConfig{3, 9, 4, 5}));

// --precision bf16: the model's loss and gradients are those of the float64 network whose GEMM
// operands are rounded to bf16 — far closer to it than to the unrounded network (so no operand was
// left unrounded, and none rounded that should not be); fp32 elsewhere.
TEST(FullMLP, Bf16IsTheNetworkWithRoundedGemmOperands) {
  const MlpConfig cfg{6, 24, 3, 3};
  const std::int64_t rows = 9;
  auto ops = kernels::make_cpu_ops(1);
  FullMLP m(cfg, rows, *ops, core::Precision::Bf16);
  EXPECT_EQ(m.precision(), core::Precision::Bf16);
  m.init(11);
  for (const auto& p : m.params())
    if (p.is_bias)
      for (std::int64_t i = 0; i < p.count; ++i)
        m.param_data()[p.offset + i] =
            0.1f * core::normal01(5, static_cast<std::uint64_t>(p.index), static_cast<std::uint64_t>(i));
  std::vector<float> x(static_cast<std::size_t>(rows * cfg.in_dim));
  std::vector<std::int32_t> y(static_cast<std::size_t>(rows));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = core::normal01(4, 1, i);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>(i % 3);
  const float scale = 1.0f / static_cast<float>(rows);
  m.forward(x.data(), rows);
  const double loss = m.backward(y.data(), scale, nullptr, nullptr, /*accumulate=*/false);

  RefMlp exact{cfg, m.params(), std::vector<double>(m.param_data(), m.param_data() + m.flat_count())};
  RefMlp rounded = exact;
  rounded.bf16 = true;
  const std::vector<double> xd(x.begin(), x.end());
  const std::vector<int> yd(y.begin(), y.end());
  std::vector<double> g_exact, g_rounded;
  const double loss_exact = exact.loss_and_grad(xd, yd, rows, scale, &g_exact);
  const double loss_rounded = rounded.loss_and_grad(xd, yd, rows, scale, &g_rounded);
  double to_rounded = 0.0, rounding = 0.0;
  for (std::size_t i = 0; i < g_exact.size(); ++i) {
    to_rounded += std::pow(m.grad_data()[i] - g_rounded[i], 2);
    rounding += std::pow(g_rounded[i] - g_exact[i], 2);
  }
  ASSERT_GT(rounding, 0.0);
  EXPECT_GT(std::abs(loss_rounded - loss_exact), 1e-5) << "bf16 must change the loss visibly";
  EXPECT_LT(std::abs(loss - loss_rounded), 0.02 * std::abs(loss_rounded - loss_exact))
      << "loss " << loss << ", bf16 reference " << loss_rounded << ", fp64 " << loss_exact;
  EXPECT_LT(std::sqrt(to_rounded), 0.02 * std::sqrt(rounding)) << "gradient norm of the difference";

  // The fp32 model of the same parameters is the unrounded network: bf16 really changed something.
  FullMLP f(cfg, rows, *ops);
  ops->copy(f.param_data(), m.param_data(), m.flat_count());
  f.forward(x.data(), rows);
  const double loss_fp32 = f.backward(y.data(), scale, nullptr, nullptr, false);
  EXPECT_NEAR(loss_fp32, loss_exact, 1e-5 * std::abs(loss_exact));
  EXPECT_GT(m.activation_bytes(), f.activation_bytes()) << "the bf16 copies are counted";
}

// --precision bf16 with the optimizer writing the GEMMs' copy of the weights (Optimizer::set_bf16_copy):
// after an update the copy is exactly the new weights' rounding, the next forward (which then skips
// its own rounding pass) computes what a fresh model of those weights computes, and a write through a
// mutable accessor makes the next forward round again (else it would use stale weights).
TEST(FullMLP, Bf16CopyMadeByTheOptimizerIsTheRoundingOfTheNewWeights) {
  const MlpConfig cfg{6, 16, 2, 3};
  const std::int64_t rows = 7;
  auto ops = kernels::make_cpu_ops(1);
  FullMLP m(cfg, rows, *ops, core::Precision::Bf16);
  m.init(3);
  OptimizerConfig oc;
  oc.lr = 0.05f;
  auto adam = make_optimizer(oc, m.flat_count(), *ops);
  adam->set_bf16_copy(m.bf16_param_copy());
  std::vector<float> x(static_cast<std::size_t>(rows * cfg.in_dim));
  std::vector<std::int32_t> y(static_cast<std::size_t>(rows));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = core::normal01(8, 1, i);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>(i % 3);
  // The loss a fresh bf16 model with m's current weights computes (it rounds them itself).
  auto fresh_loss = [&] {
    FullMLP f(cfg, rows, *ops, core::Precision::Bf16);
    ops->copy(f.param_data(), std::as_const(m).param_data(), m.flat_count());  // const: keeps m's promise
    f.forward(x.data(), rows);
    return f.backward(y.data(), 1.0f, nullptr, nullptr, false);
  };
  for (int step = 0; step < 3; ++step) {
    m.forward(x.data(), rows);
    m.backward(y.data(), 1.0f, nullptr, nullptr, false);
    adam->step(m.param_data(), m.grad_data());
    m.bf16_params_written();
    for (std::int64_t i = 0; i < m.flat_count(); ++i)
      ASSERT_EQ(m.bf16_param_copy()[i], kernels::float_to_bf16_bits(std::as_const(m).param_data()[i]))
          << "step " << step << " " << i;
    const double want = fresh_loss();
    m.forward(x.data(), rows);
    EXPECT_EQ(m.backward(y.data(), 1.0f, nullptr, nullptr, false), want) << "step " << step;
  }
  // A write the optimizer did not make: the promise is void, the next forward rounds the new weights.
  m.bf16_params_written();
  for (std::int64_t i = 0; i < m.flat_count(); ++i) m.param_data()[i] *= 0.5f;
  const double want = fresh_loss();
  m.forward(x.data(), rows);
  EXPECT_EQ(m.backward(y.data(), 1.0f, nullptr, nullptr, false), want) << "stale bf16 copy used";
}

TEST(FullMLP, BackwardAccumulatesIntoGradients) {
  auto ops = kernels::make_cpu_ops(1);
  MlpConfig cfg{4, 5, 2, 2};
  FullMLP m(cfg, 3, *ops);
  m.init(1);
  std::vector<float> x(12);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = core::normal01(5, 0, i);
  std::vector<std::int32_t> y{0, 1, 1};
  m.zero_grad();
  m.forward(x.data(), 3);
  m.backward(y.data(), 1.0f, nullptr);
  std::vector<float> once(m.grad_data(), m.grad_data() + m.flat_count());
  m.forward(x.data(), 3);
  m.backward(y.data(), 1.0f, nullptr);
  for (std::int64_t i = 0; i < m.flat_count(); ++i)
    EXPECT_FLOAT_EQ(m.grad_data()[i], 2.0f * once[static_cast<std::size_t>(i)]);
}

}  // namespace
}  // namespace microddp::model

namespace microddp::model {
namespace {

TEST(FullMLP, BackwardWithoutAccumulateOverwritesPoisonedGradients) {
  auto ops = kernels::make_cpu_ops(1);
  MlpConfig cfg{4, 5, 2, 3};
  FullMLP m(cfg, 3, *ops);
  m.init(2);
  std::vector<float> x(12);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = core::normal01(6, 0, i);
  std::vector<std::int32_t> y{2, 0, 1};
  m.zero_grad();
  m.forward(x.data(), 3);
  m.backward(y.data(), 0.5f, nullptr);
  std::vector<float> want(m.grad_data(), m.grad_data() + m.flat_count());
  for (std::int64_t i = 0; i < m.flat_count(); ++i) m.grad_data()[i] = 1e30f;  // poison
  m.forward(x.data(), 3);
  m.backward(y.data(), 0.5f, nullptr, nullptr, /*accumulate=*/false);
  // Every parameter's gradient is overwritten; the alignment padding between parameters is never
  // written (it must stay as it was: zero in a real run, so all-reduces and optimizers keep it 0).
  std::vector<char> in_param(static_cast<std::size_t>(m.flat_count()), 0);
  for (const auto& p : m.params()) std::fill_n(in_param.begin() + p.offset, p.count, 1);
  for (std::int64_t i = 0; i < m.flat_count(); ++i) {
    if (in_param[static_cast<std::size_t>(i)]) {
      ASSERT_EQ(m.grad_data()[i], want[static_cast<std::size_t>(i)]) << i;
    } else {
      ASSERT_EQ(m.grad_data()[i], 1e30f) << "padding element " << i << " was written";
    }
  }
}

}  // namespace
}  // namespace microddp::model

namespace microddp::model {
namespace {

// GradPlacement's contract (mlp.hpp): backward acquires a parameter's memory right before it first
// writes it, in gradient-ready order, AFTER the previous parameter's GradReadyFn (ZeRO-2's acquire()
// may wait for an earlier bucket's collective, which that GradReadyFn launches). A fused call writing
// a layer's bias and weight gradients at once would acquire the weight before the bias is ready; the
// placement path must keep them apart. The gradients equal the flat buffer's.
class RecordingPlacement final : public GradPlacement {
 public:
  RecordingPlacement(std::vector<std::string>* log, std::vector<float>* memory) : log_(log), memory_(memory) {}
  float* acquire(const ParamInfo& param) override {
    log_->push_back("acquire " + param.name);
    return memory_->data() + param.offset;
  }

 private:
  std::vector<std::string>* log_;
  std::vector<float>* memory_;
};

TEST(FullMLP, PlacementAcquiresEachGradientAfterThePreviousIsReady) {
  auto ops = kernels::make_cpu_ops(1);
  const MlpConfig cfg{4, 5, 2, 3};
  FullMLP m(cfg, 3, *ops);
  m.init(2);
  std::vector<float> x(12);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = core::normal01(6, 0, i);
  const std::vector<std::int32_t> y{2, 0, 1};
  m.forward(x.data(), 3);
  m.backward(y.data(), 0.5f, nullptr, nullptr, /*accumulate=*/false);
  const std::vector<float> want(m.grad_data(), m.grad_data() + m.flat_count());

  std::vector<std::string> log;
  std::vector<float> memory(static_cast<std::size_t>(m.flat_count()), 0.0f);
  RecordingPlacement placement(&log, &memory);
  m.set_grad_placement(&placement);
  m.forward(x.data(), 3);
  m.backward(y.data(), 0.5f, [&](const ParamInfo& p) { log.push_back("ready " + p.name); }, nullptr,
             /*accumulate=*/false);
  std::vector<std::string> expected;
  for (const ParamInfo& p : m.params()) {
    expected.push_back("acquire " + p.name);
    expected.push_back("ready " + p.name);
  }
  EXPECT_EQ(log, expected);
  for (const ParamInfo& p : m.params()) {
    for (std::int64_t i = p.offset; i < p.offset + p.count; ++i) {
      ASSERT_EQ(memory[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)]) << p.name << " " << i;
    }
  }
  m.set_grad_placement(nullptr);
}

}  // namespace
}  // namespace microddp::model
