// test_cpu_ops.cpp — CpuOps against float64 references and finite differences.
// What is checked: gemm for all transpose combinations, beta 0/1 and odd shapes against the triple
// loop; bias+activation, ReLU backward, bias-gradient accumulation; softmax cross-entropy (values,
// large logits, scale, bad labels); scale/zero/copy; and central-difference gradient checks (in
// double) of a whole Linear+bias+ReLU layer and of softmax cross-entropy, which catch wrong
// transposes, signs and factors in the backward formulas. gemm_bf16 (the bf16 reference) against the
// float64 GEMM of operands the test rounds itself. Outputs are NaN-poisoned first. Also the
// memory methods (allocate_bytes zero-filled and 64-byte aligned, host copies, OpsBuffer) and
// sum_squares (exact on integer inputs, non-finite inputs, no overflow for huge floats).
// Tolerances: u = 2^-24 is float32's unit roundoff; each bound is stated where it is used.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernel_test_util.hpp"
#include "kernels/host_reduce.hpp"
#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"

namespace microddp::kernels {
namespace {

using test::gemm_ref;
using test::poisoned;
using test::random_labels;
using test::random_normal;

constexpr double kU = 1.0 / 16777216.0;  // 2^-24, float32 unit roundoff

std::unique_ptr<Ops> cpu() { return make_cpu_ops(1); }

TEST(CpuOps, DescribesItself) {
  auto ops = cpu();
  EXPECT_EQ(ops->device(), core::Device::Host);
  const std::string d = ops->description();
  EXPECT_NE(d.find("OpenBLAS"), std::string::npos) << d;
  EXPECT_NE(d.find("1 thread"), std::string::npos) << d;
  EXPECT_EQ(ops->native_stream(), nullptr);
  EXPECT_THROW(make_cpu_ops(0), core::Error);
}

// ---- gemm ---------------------------------------------------------------------------------------
struct GemmShape {
  std::int64_t m, n, k;
};

TEST(CpuOps, GemmMatchesTripleLoopAllTransposes) {
  auto ops = cpu();
  const GemmShape shapes[] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {4, 3, 0}};
  std::uint64_t stream = 100;
  for (const GemmShape& s : shapes) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (float beta : {0.0f, 1.0f}) {
          SCOPED_TRACE("m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
                       " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " beta=" + std::to_string(beta));
          const float alpha = 0.75f;
          const auto a = random_normal(s.m * s.k, ++stream);
          const auto b = random_normal(s.k * s.n, ++stream);
          // beta = 0: C is NaN-poisoned, and BLAS semantics say C is then not read, so NaN must not
          // leak into the result. beta = 1: C holds data that must be accumulated into.
          std::vector<float> c = beta == 0.0f ? poisoned(s.m * s.n) : random_normal(s.m * s.n, ++stream);
          std::vector<double> abs_sum;
          const auto ref =
              gemm_ref(ta != 0, tb != 0, s.m, s.n, s.k, alpha, a.data(), b.data(), beta, c.data(), &abs_sum);
          ops->gemm(ta != 0, tb != 0, s.m, s.n, s.k, alpha, a.data(), b.data(), beta, c.data());
          for (std::size_t i = 0; i < ref.size(); ++i) {
            // Higham's bound for a k-term dot product in any order, plus the alpha and beta roundings:
            // |err| <= (k + 2) u * sum|terms|; x2 margin for how OpenBLAS splits those roundings.
            const double tol = 2.0 * static_cast<double>(s.k + 2) * kU * abs_sum[i];
            ASSERT_NEAR(c[i], ref[i], tol) << "element " << i;
          }
        }
      }
    }
  }
}

// The default GEMM (fixed tiles, kernels/cpu/tiled_gemm.hpp) over several tiles: correct for every
// transpose and beta, and the same bits at 1, 2, 3 and 4 threads (OpenBLAS's own threading differs
// in the last bits between 1 and 2 threads on 27 of the 10 240 elements of the 1024 x 10 x 512
// shape here, Haswell kernels). Shapes: tile edges inside rows and columns, k beyond OpenBLAS's
// k blocking (384 for Haswell sgemm), a skinny output like the last layer's.
TEST(CpuOps, GemmBitsDoNotDependOnThreads) {
  const GemmShape shapes[] = {{300, 260, 70}, {1024, 10, 512}, {129, 257, 900}, {5, 300, 1030}};
  std::uint64_t stream = 500;
  for (const GemmShape& s : shapes) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (float beta : {0.0f, 1.0f}) {
          SCOPED_TRACE("m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
                       " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " beta=" + std::to_string(beta));
          const auto a = random_normal(s.m * s.k, ++stream);
          const auto b = random_normal(s.k * s.n, ++stream);
          const auto c0 = beta == 0.0f ? poisoned(s.m * s.n) : random_normal(s.m * s.n, ++stream);
          std::vector<double> abs_sum;
          const auto ref = gemm_ref(ta != 0, tb != 0, s.m, s.n, s.k, 1.0, a.data(), b.data(), beta, c0.data(), &abs_sum);
          std::vector<float> one;
          for (int threads : {1, 2, 3, 4}) {
            auto ops = make_cpu_ops(threads);
            std::vector<float> c = c0;
            ops->gemm(ta != 0, tb != 0, s.m, s.n, s.k, 1.0f, a.data(), b.data(), beta, c.data());
            if (threads == 1) {
              for (std::size_t i = 0; i < ref.size(); ++i) {
                const double tol = 2.0 * static_cast<double>(s.k + 2) * kU * abs_sum[i];  // as above
                ASSERT_NEAR(c[i], ref[i], tol) << "element " << i;
              }
              one = c;
            } else {
              ASSERT_EQ(std::memcmp(c.data(), one.data(), c.size() * sizeof(float)), 0)
                  << threads << " threads differ from 1 thread";
            }
          }
        }
      }
    }
  }
}

TEST(CpuOps, GemmEmptyAndOversizedShapes) {
  auto ops = cpu();
  std::vector<float> c = {5.0f};
  ops->gemm(false, false, 0, 1, 1, 1.0f, nullptr, nullptr, 0.0f, c.data());  // m = 0: nothing to do
  EXPECT_EQ(c[0], 5.0f);
  // Counts beyond BLAS's int are refused before any memory is touched (style: no silent narrowing).
  const std::int64_t too_big = static_cast<std::int64_t>(INT_MAX) + 1;
  EXPECT_THROW(ops->gemm(false, false, too_big, 1, 1, 1.0f, nullptr, nullptr, 0.0f, nullptr), core::Error);
  EXPECT_THROW(ops->gemm(false, false, 1, 1, -1, 1.0f, nullptr, nullptr, 0.0f, nullptr), core::Error);
}

// ---- gemm_bf16: the bf16 reference ------------------------------------------------------------------
// The test rounds to bf16 by itself (round to nearest, ties to even, on the bit pattern), so the
// reference does not share the code under test; the inputs are finite.
std::uint16_t test_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float test_bf16_value(std::uint16_t h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

TEST(CpuOps, GemmBf16IsTheGemmOfTheRoundedOperands) {
  auto ops = cpu();
  const GemmShape shapes[] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {4, 3, 0}};
  ops->reserve_bf16_gemm(33 * 65);
  std::uint64_t stream = 300;
  for (const GemmShape& s : shapes) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (float beta : {0.0f, 1.0f}) {
          SCOPED_TRACE("m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
                       " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " beta=" + std::to_string(beta));
          const float alpha = 0.75f;
          const auto a32 = random_normal(s.m * s.k, ++stream);
          const auto b32 = random_normal(s.k * s.n, ++stream);
          std::vector<std::uint16_t> a(a32.size()), b(b32.size());
          std::vector<float> a_rounded(a32.size()), b_rounded(b32.size());
          for (std::size_t i = 0; i < a.size(); ++i) a_rounded[i] = test_bf16_value(a[i] = test_bf16(a32[i]));
          for (std::size_t i = 0; i < b.size(); ++i) b_rounded[i] = test_bf16_value(b[i] = test_bf16(b32[i]));
          std::vector<float> c = beta == 0.0f ? poisoned(s.m * s.n) : random_normal(s.m * s.n, ++stream);
          std::vector<double> abs_sum;
          const auto ref = gemm_ref(ta != 0, tb != 0, s.m, s.n, s.k, alpha, a_rounded.data(), b_rounded.data(), beta,
                                    c.data(), &abs_sum);
          const auto unrounded = gemm_ref(ta != 0, tb != 0, s.m, s.n, s.k, alpha, a32.data(), b32.data(), beta, c.data());
          ops->gemm_bf16(ta != 0, tb != 0, s.m, s.n, s.k, alpha, a.data(), b.data(), beta, c.data());
          double moved = 0.0;  // how far the operands' rounding moved the result: it must show
          for (std::size_t i = 0; i < ref.size(); ++i) {
            // Products of bf16 values are exact in float: only the fp32 sums round (bound as for gemm).
            const double tol = 2.0 * static_cast<double>(s.k + 2) * kU * abs_sum[i];
            ASSERT_NEAR(c[i], ref[i], tol) << "element " << i;
            moved = std::max(moved, std::fabs(ref[i] - unrounded[i]));
          }
          if (s.k >= 3) {
            EXPECT_GT(moved, 1e-4) << "bf16 rounding (~2^-9 relative) should move some element";
          }
        }
      }
    }
  }
}

TEST(CpuOps, GemmBf16RefusesOperandsLargerThanItsReservedWorkspace) {
  auto ops = cpu();
  std::vector<std::uint16_t> a(6, test_bf16(1.0f)), b(6, test_bf16(2.0f));
  std::vector<float> c(4, 0.0f);
  EXPECT_THROW(ops->gemm_bf16(false, false, 2, 2, 3, 1.0f, a.data(), b.data(), 0.0f, c.data()), core::Error);
  ops->reserve_bf16_gemm(6);
  ops->gemm_bf16(false, false, 2, 2, 3, 1.0f, a.data(), b.data(), 0.0f, c.data());
  EXPECT_EQ(c, std::vector<float>(4, 6.0f));
  ops->reserve_bf16_gemm(2);  // never shrinks
  ops->gemm_bf16(false, false, 2, 2, 3, 1.0f, a.data(), b.data(), 1.0f, c.data());
  EXPECT_EQ(c, std::vector<float>(4, 12.0f));
  EXPECT_THROW(ops->reserve_bf16_gemm(-1), core::Error);
}

// ---- bias + activation, relu backward, bias grad -----------------------------------------------
TEST(CpuOps, BiasActForward) {
  auto ops = cpu();
  const std::int64_t rows = 9, cols = 13;
  for (bool relu_on : {false, true}) {
    const auto y0 = random_normal(rows * cols, 200);
    const auto bias = random_normal(cols, 201);
    std::vector<float> y = y0;
    ops->bias_act_forward(y.data(), bias.data(), rows, cols, relu_on);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t j = 0; j < cols; ++j) {
        // Exact: (double)a + (double)b is exact for these O(1) floats, and rounding it to float gives
        // the correctly rounded float sum, which is what float addition returns.
        const float t = static_cast<float>(static_cast<double>(y0[r * cols + j]) + static_cast<double>(bias[j]));
        const float want = relu_on ? (t > 0.0f ? t : 0.0f) : t;
        ASSERT_EQ(y[r * cols + j], want) << "relu=" << relu_on << " (" << r << ", " << j << ")";
      }
    }
  }
}

// ---- fused GEMM + epilogue: CpuOps is the reference, so fused == the unfused calls, bitwise ------
// (ops.hpp names the sequence each fused call stands for; an implementation that differs, e.g. by
// adding the bias before the products are summed, or by not zeroing db first, changes bits.)
TEST(CpuOps, FusedGemmEpiloguesAreTheUnfusedCallsBitwise) {
  auto ops = cpu();
  ops->reserve_bf16_gemm(40 * 40);
  std::uint64_t stream = 700;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      for (const bool relu_on : {false, true}) {
        SCOPED_TRACE("ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " relu=" + std::to_string(relu_on));
        const std::int64_t m = 11, n = 7, k = 29;
        const auto a = random_normal(m * k, ++stream), b = random_normal(k * n, ++stream);
        const auto bias = random_normal(n, ++stream);
        std::vector<float> fused = poisoned(m * n), unfused = poisoned(m * n);
        ops->gemm_bias_act(ta, tb, m, n, k, a.data(), b.data(), bias.data(), fused.data(), relu_on);
        ops->gemm(ta, tb, m, n, k, 1.0f, a.data(), b.data(), 0.0f, unfused.data());
        ops->bias_act_forward(unfused.data(), bias.data(), m, n, relu_on);
        ASSERT_EQ(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)), 0);
        // bf16 operands
        std::vector<std::uint16_t> a16(a.size()), b16(b.size());
        ops->encode_wire16(Wire16::BF16, a.data(), a16.data(), nullptr, m * k);
        ops->encode_wire16(Wire16::BF16, b.data(), b16.data(), nullptr, k * n);
        fused = poisoned(m * n);
        unfused = poisoned(m * n);
        ops->gemm_bias_act_bf16(ta, tb, m, n, k, a16.data(), b16.data(), bias.data(), fused.data(), relu_on);
        ops->gemm_bf16(ta, tb, m, n, k, 1.0f, a16.data(), b16.data(), 0.0f, unfused.data());
        ops->bias_act_forward(unfused.data(), bias.data(), m, n, relu_on);
        ASSERT_EQ(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)), 0);
      }
    }
  }
  for (const bool accumulate : {false, true}) {
    SCOPED_TRACE(accumulate ? "accumulate" : "overwrite");
    const std::int64_t out = 9, in = 14, rows = 23;
    const auto dy = random_normal(rows * out, ++stream), x = random_normal(rows * in, ++stream);
    // Overwrite: the outputs start NaN-poisoned and must not be read; accumulate: they start random.
    const auto dw0 = accumulate ? random_normal(out * in, ++stream) : poisoned(out * in);
    const auto db0 = accumulate ? random_normal(out, ++stream) : poisoned(out);
    std::vector<float> dw_f = dw0, db_f = db0, dw_u = dw0, db_u = db0;
    ops->gemm_bias_grad(out, in, rows, dy.data(), x.data(), dw_f.data(), db_f.data(), accumulate);
    if (!accumulate) ops->zero(db_u.data(), out);
    ops->bias_grad(db_u.data(), dy.data(), rows, out);
    ops->gemm(true, false, out, in, rows, 1.0f, dy.data(), x.data(), accumulate ? 1.0f : 0.0f, dw_u.data());
    ASSERT_EQ(std::memcmp(dw_f.data(), dw_u.data(), dw_f.size() * sizeof(float)), 0);
    ASSERT_EQ(std::memcmp(db_f.data(), db_u.data(), db_f.size() * sizeof(float)), 0);
    for (float v : db_f) ASSERT_TRUE(std::isfinite(v));
  }
}

TEST(CpuOps, ReluBackward) {
  auto ops = cpu();
  const std::int64_t n = 37;
  auto y = random_normal(n, 300);
  for (auto& v : y) v = v > 0.0f ? v : 0.0f;  // a ReLU output: zeros and positives
  y[3] = 0.0f;                                // explicitly the boundary: y == 0 blocks the gradient
  const auto dy0 = random_normal(n, 301);
  std::vector<float> dy = dy0;
  ops->relu_backward(dy.data(), y.data(), n);
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(dy[i], y[i] > 0.0f ? dy0[i] : 0.0f) << i;  // exact: a select, no arithmetic
  }
}

TEST(CpuOps, BiasGradAccumulates) {
  auto ops = cpu();
  const std::int64_t rows = 11, cols = 6;
  const auto dy = random_normal(rows * cols, 400);
  const auto db0 = random_normal(cols, 401);  // pre-existing gradient: must be added to, not replaced
  std::vector<float> db = db0;
  ops->bias_grad(db.data(), dy.data(), rows, cols);
  for (std::int64_t j = 0; j < cols; ++j) {
    double want = db0[j], abs_sum = std::fabs(db0[j]);
    for (std::int64_t r = 0; r < rows; ++r) {
      want += dy[r * cols + j];
      abs_sum += std::fabs(dy[r * cols + j]);
    }
    // A (rows + 1)-term float sum: |err| <= (rows + 1) u * sum|terms| (Higham).
    EXPECT_NEAR(db[j], want, static_cast<double>(rows + 1) * kU * abs_sum) << j;
  }
  // Twice in a row accumulates twice. Integer-valued dy keeps every partial sum exact, so the
  // different association ((0 + S) + r_0 + ... vs r_0 + ...) cannot hide behind rounding.
  std::vector<float> dy_int(dy.size());
  for (std::size_t i = 0; i < dy.size(); ++i) dy_int[i] = std::round(4.0f * dy[i]);
  std::vector<float> twice(static_cast<std::size_t>(cols), 0.0f);
  ops->bias_grad(twice.data(), dy_int.data(), rows, cols);
  ops->bias_grad(twice.data(), dy_int.data(), rows, cols);
  std::vector<float> once(static_cast<std::size_t>(cols), 0.0f);
  ops->bias_grad(once.data(), dy_int.data(), rows, cols);
  for (std::int64_t j = 0; j < cols; ++j) EXPECT_EQ(twice[j], 2.0f * once[j]) << j;
}

// ---- softmax cross-entropy ----------------------------------------------------------------------
// Checks loss and gradient of one call against the double reference.
void check_xent(Ops& ops, const std::vector<float>& logits, const std::vector<std::int32_t>& labels, std::int64_t rows,
                std::int64_t classes, float scale) {
  std::vector<float> d = poisoned(rows * classes);
  float loss = test::kPoison;
  ops.softmax_xent(logits.data(), labels.data(), rows, classes, scale, d.data(), &loss);
  double ref_loss = 0.0;
  std::vector<double> x(static_cast<std::size_t>(classes)), p(static_cast<std::size_t>(classes));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < classes; ++j) x[j] = logits[r * classes + j];
    ref_loss += test::xent_row_ref(x.data(), classes, labels[r], p.data());
    for (std::int64_t j = 0; j < classes; ++j) {
      const double want = scale * (p[j] - (j == labels[r] ? 1.0 : 0.0));
      // p_j = e_j / S with S a classes-term float sum: relative error <= (classes + 3) u; the result
      // is scaled by `scale`, and |p_j| <= 1, so the absolute bound is (classes + 3) u * scale (x2 margin).
      ASSERT_NEAR(d[r * classes + j], want, 2.0 * static_cast<double>(classes + 3) * kU * scale)
          << "row " << r << " class " << j;
      ASSERT_TRUE(std::isfinite(d[r * classes + j]));
    }
  }
  ref_loss *= scale;
  // Per row: (M - x_t) is exact, log S is off by <= (classes + 2) u (absolute) from S's rounding; the
  // rows' float losses then carry u relative each. Bound (classes + 3) u (1 + |row loss|) per row,
  // times `scale` summed over rows; x2 margin.
  const double tol = 2.0 * static_cast<double>(classes + 3) * kU *
                     (static_cast<double>(scale) * static_cast<double>(rows) + std::fabs(ref_loss));
  EXPECT_NEAR(loss, ref_loss, tol);
  EXPECT_TRUE(std::isfinite(loss));
}

TEST(CpuOps, SoftmaxXentMatchesDoubleReference) {
  auto ops = cpu();
  for (std::int64_t classes : {1, 2, 10, 33}) {
    const std::int64_t rows = 7;
    SCOPED_TRACE("classes=" + std::to_string(classes));
    check_xent(*ops, random_normal(rows * classes, 500 + classes, 3.0f), random_labels(rows, classes, 510 + classes),
               rows, classes, 1.0f / static_cast<float>(rows));
  }
}

TEST(CpuOps, SoftmaxXentLargeLogitsStayFinite) {
  auto ops = cpu();
  // exp(1e4) overflows float (max ~ 3.4e38 = e^88.7); the max-subtracted form never exponentiates
  // anything positive. Row 0: a confident correct prediction; row 1: the label at -1e4 (loss ~ 2e4);
  // row 2: all equal (loss = log 4); row 3: mixed signs and magnitudes.
  const std::vector<float> logits = {1e4f,  9999.0f, -1e4f, 0.0f,  //
                                     1e4f,  9999.0f, -1e4f, 0.0f,  //
                                     1e4f,  1e4f,    1e4f,  1e4f,  //
                                     -3.5f, 1e4f,    -1e4f, 42.0f};
  const std::vector<std::int32_t> labels = {0, 2, 3, 1};
  check_xent(*ops, logits, labels, 4, 4, 0.25f);
  std::vector<float> d = poisoned(4);
  float loss = 0.0f;
  ops->softmax_xent(logits.data() + 8, labels.data() + 2, 1, 4, 1.0f, d.data(), &loss);
  EXPECT_NEAR(loss, std::log(4.0), 4 * kU);  // log S with S = 4 exactly: one rounding of log
}

TEST(CpuOps, SoftmaxXentScaleIsExactForPowersOfTwo) {
  auto ops = cpu();
  const std::int64_t rows = 5, classes = 6;
  const auto logits = random_normal(rows * classes, 600, 2.0f);
  const auto labels = random_labels(rows, classes, 601);
  std::vector<float> d1 = poisoned(rows * classes), dq = poisoned(rows * classes);
  float l1 = test::kPoison, lq = test::kPoison;
  ops->softmax_xent(logits.data(), labels.data(), rows, classes, 1.0f, d1.data(), &l1);
  ops->softmax_xent(logits.data(), labels.data(), rows, classes, 0.25f, dq.data(), &lq);
  // Multiplying by 2^-2 commutes with float rounding (no subnormals here), so results are bitwise
  // scale * (unscaled result).
  EXPECT_EQ(lq, 0.25f * l1);
  for (std::int64_t i = 0; i < rows * classes; ++i) EXPECT_EQ(dq[i], 0.25f * d1[i]) << i;
}

TEST(CpuOps, SoftmaxXentRejectsBadLabelsAndHandlesEmptyBatch) {
  auto ops = cpu();
  const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
  for (std::int32_t bad : {-1, 3, INT32_MAX}) {
    const std::vector<std::int32_t> labels = {1, bad};
    std::vector<float> d = poisoned(6);
    float loss = test::kPoison;
    EXPECT_THROW(ops->softmax_xent(logits.data(), labels.data(), 2, 3, 0.5f, d.data(), &loss), core::Error) << bad;
    EXPECT_TRUE(std::isnan(d[0])) << "a rejected batch leaves the outputs untouched";
  }
  float loss = test::kPoison;
  ops->softmax_xent(logits.data(), nullptr, 0, 3, 0.5f, nullptr, &loss);
  EXPECT_EQ(loss, 0.0f) << "loss_out is overwritten even for an empty batch";
}

// ---- scale / zero / copy -----------------------------------------------------------------------
TEST(CpuOps, ScaleZeroCopy) {
  auto ops = cpu();
  const std::int64_t n = 19;
  const auto x0 = random_normal(n, 700);
  std::vector<float> x = x0;
  ops->scale(x.data(), -0.5f, n);
  for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(x[i], -0.5f * x0[i]);  // exact: power-of-two factor
  std::vector<float> z = poisoned(n);
  ops->zero(z.data(), n);
  for (float v : z) EXPECT_EQ(v, 0.0f);
  std::vector<float> c = poisoned(n);
  ops->copy(c.data(), x0.data(), n);
  EXPECT_EQ(c, x0);
  ops->zero(nullptr, 0);
  ops->copy(nullptr, nullptr, 0);
  ops->synchronize();
}

// ---- finite-difference gradient checks -----------------------------------------------------------
// One Linear layer y = act(x W^T + b), x (B, in), W (out, in), b (out), and the scalar
// L = sum(w_out * y) with fixed random w_out (B, out). The forward and backward run through the
// Ops exactly as the model will: forward gemm(N, T) + bias_act; backward relu_backward, bias_grad,
// dW = dy^T x (gemm(T, N), accumulating), dx = dy W (gemm(N, N)).
struct LinearCase {
  std::int64_t batch = 5, in = 7, out = 4;
  std::vector<float> x, w, b, w_out;
};

double linear_loss_ref(const LinearCase& c, const std::vector<double>& x, const std::vector<double>& w,
                       const std::vector<double>& b, bool relu_on, double* min_abs_preact = nullptr) {
  double loss = 0.0;
  for (std::int64_t i = 0; i < c.batch; ++i) {
    for (std::int64_t o = 0; o < c.out; ++o) {
      double t = b[o];
      for (std::int64_t p = 0; p < c.in; ++p) t += x[i * c.in + p] * w[o * c.in + p];
      if (min_abs_preact != nullptr) *min_abs_preact = std::fmin(*min_abs_preact, std::fabs(t));
      loss += c.w_out[i * c.out + o] * (relu_on ? std::fmax(t, 0.0) : t);
    }
  }
  return loss;
}

TEST(CpuOps, LinearLayerGradientsMatchFiniteDifferences) {
  auto ops = cpu();
  for (bool relu_on : {true, false}) {
    SCOPED_TRACE(relu_on ? "relu" : "identity");
    LinearCase c;
    c.x = random_normal(c.batch * c.in, 800);
    c.w = random_normal(c.out * c.in, 801, 0.5f);
    c.b = random_normal(c.out, 802, 0.1f);
    c.w_out = random_normal(c.batch * c.out, 803);

    // Analytic gradients through the fp32 Ops.
    std::vector<float> y = poisoned(c.batch * c.out);
    ops->gemm(false, true, c.batch, c.out, c.in, 1.0f, c.x.data(), c.w.data(), 0.0f, y.data());
    ops->bias_act_forward(y.data(), c.b.data(), c.batch, c.out, relu_on);
    std::vector<float> dy = c.w_out;  // dL/dy
    if (relu_on) ops->relu_backward(dy.data(), y.data(), c.batch * c.out);
    std::vector<float> db(static_cast<std::size_t>(c.out), 0.0f), dw(static_cast<std::size_t>(c.out * c.in), 0.0f);
    ops->bias_grad(db.data(), dy.data(), c.batch, c.out);
    ops->gemm(true, false, c.out, c.in, c.batch, 1.0f, dy.data(), c.x.data(), 1.0f, dw.data());
    std::vector<float> dx = poisoned(c.batch * c.in);
    ops->gemm(false, false, c.batch, c.in, c.out, 1.0f, dy.data(), c.w.data(), 0.0f, dx.data());

    // Central differences on the double reference. L is linear in each single coordinate except at
    // ReLU kinks, so the difference is exact up to roundoff (~1e-16 |L| / h = 1e-10) unless a
    // pre-activation lies within h * |coefficient| (< 1e-5) of 0 — ruled out by the assertion below.
    const double h = 1e-6;
    std::vector<double> xd(c.x.begin(), c.x.end()), wd(c.w.begin(), c.w.end()), bd(c.b.begin(), c.b.end());
    double min_abs_preact = 1e300;
    linear_loss_ref(c, xd, wd, bd, relu_on, &min_abs_preact);
    ASSERT_GT(min_abs_preact, 1e-4) << "inputs too close to a ReLU kink for the finite difference";
    // The fp32 gradients are sums of <= 7 products of O(1) values: |err| <= 7 u * 7 ~ 3e-6; 1e-5 leaves
    // margin while any wrong transpose, sign or factor gives O(0.1..1) errors.
    const double tol = 1e-5;
    auto check = [&](std::vector<double>& v, const std::vector<float>& grad, const char* name) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        const double keep = v[i];
        v[i] = keep + h;
        const double lp = linear_loss_ref(c, xd, wd, bd, relu_on);
        v[i] = keep - h;
        const double lm = linear_loss_ref(c, xd, wd, bd, relu_on);
        v[i] = keep;
        ASSERT_NEAR(grad[i], (lp - lm) / (2 * h), tol) << name << "[" << i << "]";
      }
    };
    check(xd, dx, "dx");
    check(wd, dw, "dW");
    check(bd, db, "db");
  }
}

TEST(CpuOps, SoftmaxXentGradientMatchesFiniteDifferences) {
  auto ops = cpu();
  const std::int64_t rows = 6, classes = 5;
  const float scale = 1.0f / 8.0f;  // e.g. these 6 rows are one rank's share of a global batch of 8
  const auto logits = random_normal(rows * classes, 900, 2.0f);
  const auto labels = random_labels(rows, classes, 901);
  std::vector<float> d = poisoned(rows * classes);
  float loss = test::kPoison;
  ops->softmax_xent(logits.data(), labels.data(), rows, classes, scale, d.data(), &loss);

  std::vector<double> x(logits.begin(), logits.end());
  auto loss_ref = [&]() {
    double l = 0.0;
    for (std::int64_t r = 0; r < rows; ++r) l += test::xent_row_ref(&x[r * classes], classes, labels[r], nullptr);
    return scale * l;
  };
  EXPECT_NEAR(loss, loss_ref(), 1e-6);  // see check_xent's bound: (5 + 3) u * 2 ~ 1e-6 for O(1) losses
  // Smooth in the logits: central-difference truncation ~ h^2 |L'''| ~ 1e-8 * 0.1, roundoff
  // ~ 1e-16 / h = 1e-12; the fp32 gradient is off by <= (classes + 3) u * scale ~ 6e-8.
  const double h = 1e-4, tol = 1e-6;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double lp = loss_ref();
    x[i] = keep - h;
    const double lm = loss_ref();
    x[i] = keep;
    ASSERT_NEAR(d[i], (lp - lm) / (2 * h), tol) << "dlogits[" << i << "]";
  }
}

// ---- optimizer passes (formulas are checked by hand in test_optimizer_math.cpp) -----------------
TEST(CpuOps, OptimizerPassesApplyTheSharedFormulaToEveryElement) {
  auto ops = cpu();
  const std::int64_t n = 23;
  const auto g = random_normal(n, 1000);
  AdamParams a;
  a.lr = 0.01f;
  a.weight_decay = 0.1f;
  a.decoupled = true;
  a.bias_correction1 = 0.1f;
  a.bias_correction2 = 0.001f;
  std::vector<float> p = random_normal(n, 1001), m = random_normal(n, 1002), v(static_cast<std::size_t>(n), 0.5f);
  std::vector<float> pe = p, me = m, ve = v;
  std::vector<std::uint16_t> pb(static_cast<std::size_t>(n), 0xFFFF);  // the bf16 copy of the new weights
  ops->adam_step(a, p.data(), g.data(), m.data(), v.data(), n, pb.data());
  for (std::int64_t i = 0; i < n; ++i) {
    adam_update(a, pe[i], g[i], me[i], ve[i]);
    ASSERT_EQ(pb[i], float_to_bf16_bits(pe[i])) << i;
    // Exact: the same inline function on the same inputs (vectorisation does not reassociate here).
    ASSERT_EQ(p[i], pe[i]) << i;
    ASSERT_EQ(m[i], me[i]) << i;
    ASSERT_EQ(v[i], ve[i]) << i;
  }
  SgdParams s;
  s.lr = 0.1f;
  s.momentum = 0.9f;
  s.nesterov = true;
  std::vector<float> buf(static_cast<std::size_t>(n), 0.25f), bufe = buf;
  ops->sgd_step(s, p.data(), g.data(), buf.data(), n, pb.data());
  for (std::int64_t i = 0; i < n; ++i) {
    sgd_update(s, pe[i], g[i], bufe[i]);
    ASSERT_EQ(pb[i], float_to_bf16_bits(pe[i])) << i;
    ASSERT_EQ(p[i], pe[i]) << i;
    ASSERT_EQ(buf[i], bufe[i]) << i;
  }
  // Momentum 0 needs no buffer; momentum != 0 without one is an error.
  s.momentum = 0.0f;
  s.nesterov = false;
  ops->sgd_step(s, p.data(), g.data(), nullptr, n, nullptr);
  s.momentum = 0.5f;
  EXPECT_THROW(ops->sgd_step(s, p.data(), g.data(), nullptr, n, nullptr), core::Error);
}

// ---- memory: allocate_bytes / free_bytes / host copies / OpsBuffer --------------------------------
TEST(CpuOps, AllocateBytesIsZeroFilledAndAligned) {
  auto ops = cpu();
  EXPECT_EQ(ops->allocate_bytes(0), nullptr);
  ops->free_bytes(nullptr);  // nothing to do, must not crash
  for (std::size_t bytes : {std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65}, std::size_t{1000},
                            std::size_t{(1u << 20) + 1}}) {
    SCOPED_TRACE("bytes=" + std::to_string(bytes));
    // Dirty 8 blocks of the same size and give them back first: glibc hands (some of) that memory out
    // again (checked: without the zero-fill this fails from 1000 bytes up), so a missing zero-fill
    // shows as 0xAB instead of hiding behind fresh zero pages.
    constexpr int kBlocks = 8;
    void* p[kBlocks];
    for (void*& q : p) {
      q = ops->allocate_bytes(bytes);
      ASSERT_NE(q, nullptr);
      std::memset(q, 0xAB, bytes);
    }
    for (void* q : p) ops->free_bytes(q);
    for (void*& q : p) {
      q = ops->allocate_bytes(bytes);
      ASSERT_NE(q, nullptr);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % 64, 0u) << "64-byte alignment (cache line)";
      const auto* b = static_cast<const unsigned char*>(q);
      for (std::size_t i = 0; i < bytes; ++i) ASSERT_EQ(b[i], 0u) << "byte " << i;
    }
    for (void* q : p) ops->free_bytes(q);
  }
}

TEST(CpuOps, AllocateBytesRefusesImpossibleSizesNamingThem) {
  auto ops = cpu();
  // Larger than any object (PTRDIFF_MAX): refused before the allocator is asked, so this also holds
  // under ASan (which aborts on such requests instead of returning null).
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  try {
    (void)ops->allocate_bytes(huge);
    FAIL() << "allocate_bytes(SIZE_MAX) returned";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(huge)), std::string::npos) << e.what();
  }
}

TEST(CpuOps, HostCopiesRoundTrip) {
  auto ops = cpu();
  const std::int64_t n = 1001;
  const auto x = random_normal(n, 1100);
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  auto* dev = static_cast<float*>(ops->allocate_bytes(bytes));
  ASSERT_NE(dev, nullptr);
  ops->copy_from_host(dev, x.data(), bytes);
  std::vector<float> back = poisoned(n);
  ops->copy_to_host(back.data(), dev, bytes);
  EXPECT_EQ(back, x);
  ops->copy_from_host(nullptr, nullptr, 0);  // 0 bytes: nothing touched
  ops->copy_to_host(nullptr, nullptr, 0);
  ops->free_bytes(dev);
}

TEST(CpuOps, OpsBufferOwnsZeroedMemoryAndCopiesRanges) {
  auto ops = cpu();
  const std::int64_t n = 100;
  OpsBuffer<float> buf(*ops, n);
  EXPECT_EQ(buf.count(), n);
  EXPECT_EQ(buf.bytes(), n * 4);
  EXPECT_EQ(buf.device(), core::Device::Host);
  const auto x = random_normal(50, 1200);
  buf.from_host(x.data(), 10, 50);  // elements [10, 60)
  std::vector<float> all = poisoned(n);
  buf.to_host(all.data(), 0, n);
  for (std::int64_t i = 0; i < n; ++i) {
    const float want = (i >= 10 && i < 60) ? x[i - 10] : 0.0f;  // outside the copy: still zero
    ASSERT_EQ(all[i], want) << i;
  }
  EXPECT_THROW(buf.to_host(all.data(), 60, 41), core::Error);  // [60, 101) is past the end
  EXPECT_THROW(buf.from_host(x.data(), -1, 1), core::Error);
  EXPECT_THROW(OpsBuffer<float>(*ops, -1), core::Error);
  OpsBuffer<float> moved = std::move(buf);
  EXPECT_EQ(moved.count(), n);
  EXPECT_EQ(buf.count(), 0);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_EQ(buf.data(), nullptr);
  OpsBuffer<double> empty(*ops, 0);
  EXPECT_EQ(empty.data(), nullptr);
}

// ---- sum_squares ----------------------------------------------------------------------------------
// x_i = +-(i % 13 + 1): never 0 (a skipped element always changes the sum), signs alternate (a
// missing square shows), and every square and partial sum is a small integer, so double sums are
// exact in any order and the int64 reference is the exact answer.
std::vector<float> small_integers(std::int64_t n) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[i] = static_cast<float>((i % 13 + 1) * (i % 2 == 0 ? 1 : -1));
  return x;
}

TEST(CpuOps, SumSquaresIsExactOnIntegers) {
  auto ops = cpu();
  // 0, 1, below / at / past one round of the 8 accumulators, and large with a tail (1000003 % 8 = 3).
  for (std::int64_t n : {0, 1, 7, 8, 9, 1000003}) {
    const auto x = small_integers(n);
    std::int64_t want = 0;  // exact: <= 169 * 1000003 < 2^31
    for (std::int64_t i = 0; i < n; ++i) want += (i % 13 + 1) * (i % 13 + 1);
    EXPECT_EQ(ops->sum_squares(x.data(), n), static_cast<double>(want)) << "n=" << n;
  }
  EXPECT_THROW(ops->sum_squares(nullptr, -1), core::Error);
}

TEST(CpuOps, SumSquaresMatchesLongDoubleOnRandomData) {
  auto ops = cpu();
  for (std::int64_t n : {1, 9, 1000003}) {
    const auto x = random_normal(n, 1300 + static_cast<std::uint64_t>(n));
    long double want = 0.0L;
    for (float v : x) want += static_cast<long double>(v) * static_cast<long double>(v);
    const double got = ops->sum_squares(x.data(), n);
    // Positive terms, each square exact in double: every accumulator is off by at most
    // (its term count) * 2^-53 relative and the final 8 additions add 8 * 2^-53, so n * 2^-53 bounds
    // the whole (long double's own error is 2^11 times smaller). A dropped or unsquared element is
    // ~1e-6 relative at n = 1e6, far above 1.1e-10.
    const double tol = static_cast<double>(n + 8) * std::ldexp(1.0, -53) * static_cast<double>(want);
    EXPECT_NEAR(got, static_cast<double>(want), tol) << "n=" << n;
    EXPECT_EQ(got, host_sum_squares(x.data(), n)) << "CpuOps uses the shared host algorithm bitwise";
    EXPECT_EQ(got, ops->sum_squares(x.data(), n)) << "repeatable";
  }
}

TEST(CpuOps, SumSquaresIsNonFiniteExactlyWhenAnInputIs) {
  auto ops = cpu();
  const std::int64_t n = 1000003;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // First element, the last of the first 8-lane round, a middle one, and the tail (past n / 8 * 8).
  for (std::int64_t pos : {std::int64_t{0}, std::int64_t{7}, n / 2, n - 1}) {
    SCOPED_TRACE("pos=" + std::to_string(pos));
    auto x = small_integers(n);
    x[pos] = nan;
    EXPECT_TRUE(std::isnan(ops->sum_squares(x.data(), n)));
    x[pos] = inf;
    EXPECT_EQ(ops->sum_squares(x.data(), n), std::numeric_limits<double>::infinity());
    x[pos] = -inf;
    EXPECT_EQ(ops->sum_squares(x.data(), n), std::numeric_limits<double>::infinity());
  }
  // Huge but finite floats: their squares (up to FLT_MAX^2 = 1.2e77) overflow float but not double.
  std::vector<float> big(1000, 1e30f);
  big[3] = -std::numeric_limits<float>::max();
  const double got = ops->sum_squares(big.data(), 1000);
  EXPECT_TRUE(std::isfinite(got));
  const double fmax = std::numeric_limits<float>::max();
  const double v = 1e30f;
  EXPECT_NEAR(got, 999.0 * v * v + fmax * fmax, 1e-12 * got);  // 1000 positive terms: <= 1000 * 2^-53 relative
}

}  // namespace
}  // namespace microddp::kernels
