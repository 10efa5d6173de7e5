// test_portable_math.cpp — the bit-portable log, cos and normal of kernels/portable_math.hpp against
// float64, over every input the synthetic data generator can give them (2^24 values each), and the
// distribution of the normals they make.
// Bounds (the header states them; measured maxima in parentheses, GCC 12 x86-64):
//   log_u24      relative error < 1e-7 (8.1e-8, about 1.4 ulp)
//   cos_2pi_u24  absolute error < 1e-7 (6.9e-8)
//   box_muller   absolute error < 1.6e-6 (5.3e-7 over 2^22 Philox blocks); derived from the two
//                bounds above: radius r <= sqrt(2 * 24 ln 2) = 5.77 is off by at most
//                r (1e-7 / 2 + 2^-24), then r |cos| 2^-24 for the last product and r * 1e-7 for cos:
//                5.77 * (5e-8 + 6e-8 + 6e-8 + 1e-7) = 1.56e-6.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.hpp"
#include "kernels/portable_math.hpp"
#include "kernels/synthetic_data.hpp"

namespace microddp::kernels {
namespace {

constexpr std::uint32_t kU24 = 1u << 24;
constexpr double kPi = 3.14159265358979323846;

double ln_ref(std::uint32_t k) { return std::log(std::ldexp(static_cast<double>(k), -24)); }
double cos_ref(std::uint32_t k) { return std::cos(2.0 * kPi * std::ldexp(static_cast<double>(k), -24)); }

TEST(PortableMath, LogOfEveryGeneratorInputIsWithinItsBound) {
  double worst = 0.0;
  std::uint32_t worst_k = 0;
  for (std::uint32_t k = 1; k <= kU24; ++k) {
    const double ref = ln_ref(k);
    const double got = log_u24(k);
    if (k == kU24) {
      EXPECT_EQ(got, 0.0);  // ln 1, exactly
      continue;
    }
    const double rel = std::fabs(got - ref) / std::fabs(ref);
    if (rel > worst) {
      worst = rel;
      worst_k = k;
    }
  }
  std::printf("# log_u24: max relative error %.3e at k = %u\n", worst, worst_k);
  EXPECT_LT(worst, 1e-7) << "k = " << worst_k;
}

TEST(PortableMath, CosOfEveryGeneratorInputIsWithinItsBound) {
  double worst = 0.0;
  std::uint32_t worst_k = 0;
  for (std::uint32_t k = 0; k < kU24; ++k) {
    const double err = std::fabs(cos_2pi_u24(k) - cos_ref(k));
    if (err > worst) {
      worst = err;
      worst_k = k;
    }
  }
  std::printf("# cos_2pi_u24: max absolute error %.3e at k = %u\n", worst, worst_k);
  EXPECT_LT(worst, 1e-7) << "k = " << worst_k;
  // The quadrant points are exact: cos 0 = 1, cos(pi/2) = 0, cos(pi) = -1, cos(3 pi / 2) = 0.
  EXPECT_EQ(cos_2pi_u24(0), 1.0f);
  EXPECT_EQ(cos_2pi_u24(kU24 / 4), 0.0f);
  EXPECT_EQ(cos_2pi_u24(kU24 / 2), -1.0f);
  EXPECT_EQ(cos_2pi_u24(3 * (kU24 / 4)), 0.0f);
}

TEST(PortableMath, NormalIsBoxMullerWithinItsBoundAndCloseToLibm) {
  double worst = 0.0, worst_vs_libm = 0.0;
  std::int64_t differ = 0;
  constexpr std::uint64_t kN = 1u << 22;
  for (std::uint64_t i = 0; i < kN; ++i) {
    const core::Philox4x32 r = core::philox_block(11, 5, i);
    const double u1 = std::ldexp(static_cast<double>((r.v[0] >> 8) + 1), -24);
    const double u2 = std::ldexp(static_cast<double>(r.v[1] >> 8), -24);
    const double ref = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
    const float got = portable_normal01(11, 5, i);
    ASSERT_EQ(float_bits(got), float_bits(box_muller(r.v[0], r.v[1])));
    worst = std::fmax(worst, std::fabs(got - ref));
    const float libm = core::normal01(11, 5, i);  // the same block through glibc's logf / cosf
    worst_vs_libm = std::fmax(worst_vs_libm, std::fabs(static_cast<double>(got) - libm));
    differ += got != libm ? 1 : 0;
  }
  std::printf("# box_muller: max absolute error %.3e; differs from core::normal01 in %lld of %llu, by <= %.3e\n", worst,
              static_cast<long long>(differ), static_cast<unsigned long long>(kN), worst_vs_libm);
  EXPECT_LT(worst, 1.6e-6);
  // Both are within a few ulp of the same Box-Muller value (|value| <= 5.8, ulp <= 4.8e-7).
  EXPECT_LT(worst_vs_libm, 4e-6);
}

// Mean, variance and tails of 2^22 normals against N(0, 1), each within 5 standard errors.
TEST(PortableMath, NormalsHaveTheStandardNormalDistribution) {
  constexpr std::int64_t kN = 1 << 22;
  std::vector<float> v(kN);
  portable_normal_fill(3, 9, 0, kN, v.data());
  double sum = 0.0, sum2 = 0.0, sum4 = 0.0;
  std::int64_t beyond2 = 0, beyond3 = 0, beyond4 = 0, positive = 0;
  for (float f : v) {
    const double x = f;
    sum += x;
    sum2 += x * x;
    sum4 += x * x * x * x;
    const double a = std::fabs(x);
    beyond2 += a > 2.0 ? 1 : 0;
    beyond3 += a > 3.0 ? 1 : 0;
    beyond4 += a > 4.0 ? 1 : 0;
    positive += x > 0.0 ? 1 : 0;
  }
  const double n = static_cast<double>(kN);
  EXPECT_NEAR(sum / n, 0.0, 5.0 / std::sqrt(n));          // sd of the mean: 1 / sqrt(n)
  EXPECT_NEAR(sum2 / n, 1.0, 5.0 * std::sqrt(2.0 / n));   // sd of the variance: sqrt(2 / n)
  EXPECT_NEAR(sum4 / n, 3.0, 5.0 * std::sqrt(96.0 / n));  // kurtosis 3; var(x^4) = 105 - 9
  EXPECT_NEAR(static_cast<double>(positive) / n, 0.5, 5.0 * 0.5 / std::sqrt(n));
  // Two-sided tail probabilities P(|x| > t) = erfc(t / sqrt 2); binomial counts.
  for (const auto& [t, count] : {std::pair{2.0, beyond2}, std::pair{3.0, beyond3}, std::pair{4.0, beyond4}}) {
    const double p = std::erfc(t / std::sqrt(2.0));
    EXPECT_NEAR(static_cast<double>(count), n * p, 5.0 * std::sqrt(n * p * (1.0 - p))) << "tail beyond " << t;
  }
}

// The vectorised host fill is the per-element definition, for any start and length (blocks, tails,
// counters crossing 2^32).
TEST(PortableMath, VectorisedFillIsThePerElementFunction) {
  for (const std::uint64_t start : {std::uint64_t{0}, std::uint64_t{5}, (std::uint64_t{1} << 32) - 7}) {
    for (const std::int64_t n : {0, 1, 15, 16, 17, 100, 1000}) {
      std::vector<float> got(static_cast<std::size_t>(n) + 1, -7.0f);  // one extra: must stay untouched
      portable_normal_fill(21, 4, start, n, got.data());
      for (std::int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(float_bits(got[static_cast<std::size_t>(i)]),
                  float_bits(portable_normal01(21, 4, start + static_cast<std::uint64_t>(i))))
            << "start " << start << " n " << n << " i " << i;
      }
      EXPECT_EQ(got.back(), -7.0f);
    }
  }
}

}  // namespace
}  // namespace microddp::kernels
