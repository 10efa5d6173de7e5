// test_numerics.cpp — the step's numerical guards against float64 references (no MPI):
// grad_sum_squares (finiteness + norm in one pass), the clip factor, --on-nan names. (The
// MICRODDP_FAULT_* parser is the app's: tests/app/test_fault_env.cpp.)
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "ddp/numerics.hpp"

namespace microddp::ddp {
namespace {

std::vector<float> random_grad(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);  // magnitudes 1e-6 .. 1e6
  std::vector<float> g(n);
  for (auto& x : g) x = std::ldexp(normal(gen), exponent(gen));
  return g;
}

double reference_sum_squares(const std::vector<float>& g) {
  double s = 0.0;
  for (float x : g) s += static_cast<double>(x) * static_cast<double>(x);
  return s;
}

TEST(GradSumSquares, MatchesFloat64Reference) {
  // Sizes around the 8-lane blocking (tail handling) and one large enough to matter.
  for (std::size_t n : {0u, 1u, 7u, 8u, 9u, 15u, 16u, 17u, 1000u, 100003u}) {
    const auto g = random_grad(n, static_cast<unsigned>(n) + 1);
    const double ref = reference_sum_squares(g);
    const double got = grad_sum_squares(g.data(), static_cast<std::int64_t>(n));
    // Both sum the same exactly-representable squares (a float squared is exact in double) in a
    // different order; positive terms, so the relative difference is at most ~n * 2^-53
    // (1.1e-11 for n = 1e5).
    EXPECT_NEAR(got, ref, 1.2e-16 * static_cast<double>(n + 1) * ref) << "n = " << n;
  }
}

TEST(GradSumSquares, AnyNonFiniteElementMakesItNonFinite) {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (std::size_t n : {1u, 9u, 1003u}) {
    for (std::size_t pos : {std::size_t{0}, n / 2, n - 1}) {  // first lane, middle, scalar tail
      for (float b : bad) {
        auto g = random_grad(n, 7);
        g[pos] = b;
        EXPECT_FALSE(std::isfinite(grad_sum_squares(g.data(), static_cast<std::int64_t>(n))))
            << "n=" << n << " pos=" << pos << " value=" << b;
      }
    }
  }
  // The largest finite floats do not overflow the double accumulator (FLT_MAX^2 ~ 1.2e77).
  std::vector<float> big(100000, FLT_MAX);
  const double s = grad_sum_squares(big.data(), static_cast<std::int64_t>(big.size()));
  EXPECT_TRUE(std::isfinite(s));
  EXPECT_NEAR(s, 1e5 * static_cast<double>(FLT_MAX) * static_cast<double>(FLT_MAX), 1e-12 * s);
}

TEST(ClipFactor, MatchesClosedForm) {
  // PyTorch clip_grad_norm_: coef = max_norm / (total_norm + 1e-6), clamped to at most 1.
  EXPECT_DOUBLE_EQ(clip_factor(5.0, 1.0), 1.0 / (5.0 + 1e-6));
  EXPECT_DOUBLE_EQ(clip_factor(5.0, 10.0), 1.0);
  EXPECT_DOUBLE_EQ(clip_factor(0.0, 1.0), 1.0);                 // zero gradient: no NaN, no change
  EXPECT_DOUBLE_EQ(clip_factor(1.0, 1.0), 1.0 / (1.0 + 1e-6));  // the eps makes it just below 1
  // On a random gradient: scaled by the factor (in float, as the trainer does) its norm is the
  // limit, to float precision (rounding of each scaled element: ~6e-8 relative).
  auto g = random_grad(4099, 3);
  const double norm = std::sqrt(reference_sum_squares(g));
  const double max_norm = norm / 7.0;
  const double f = clip_factor(std::sqrt(grad_sum_squares(g.data(), 4099)), max_norm);
  EXPECT_NEAR(f, max_norm / (norm + 1e-6), 1e-14);
  for (auto& x : g) x *= static_cast<float>(f);
  EXPECT_NEAR(std::sqrt(reference_sum_squares(g)), max_norm, 1e-6 * max_norm);
}

TEST(NanPolicy, ParsesNames) {
  EXPECT_EQ(parse_nan_policy("abort"), NanPolicy::Abort);
  EXPECT_EQ(parse_nan_policy("skip"), NanPolicy::Skip);
  EXPECT_EQ(nan_policy_name(NanPolicy::Skip), "skip");
  EXPECT_THROW(parse_nan_policy("ignore"), core::UsageError);
}

}  // namespace
}  // namespace microddp::ddp
