// test_synthetic_rows.cpp — the CPU maker of the synthetic rows (kernels/synthetic_data.hpp):
// bit for bit its per-element definition (the vectorised blocks, the sample lanes of the labels and
// the tails are the same function), CpuOps::synthetic_rows is the same, and the rows are right
// against float64: features within box_muller's bound, labels the float64 arg-max wherever the float
// sums cannot have changed it. Outputs are poisoned first; one element past the end must stay.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernel_test_util.hpp"
#include "kernels/ops.hpp"
#include "kernels/portable_math.hpp"
#include "kernels/synthetic_data.hpp"

namespace microddp::kernels {
namespace {

struct Case {
  std::int64_t first, count, in_dim, classes;
};
// Sizes around the makers' blocks (16 normals, 16 samples), count 0, one column, first near 2^32 / in_dim.
const Case kCases[] = {{0, 0, 8, 3},
                       {0, 1, 1, 2},
                       {5, 17, 7, 3},
                       {1000, 33, 64, 10},
                       {3, 40, 5, 17},
                       {7, 16, 16, 2},
                       {(1ll << 32) / 9, 21, 9, 4},
                       {12345, 50, 100, 7}};

std::string name(const Case& c) {
  return "first " + std::to_string(c.first) + " count " + std::to_string(c.count) + " in_dim " +
         std::to_string(c.in_dim) + " classes " + std::to_string(c.classes);
}

struct Rows {
  std::vector<float> x;
  std::vector<std::int32_t> y;
};

// Poisoned outputs with one guard element each.
Rows poisoned_rows(const Case& c) {
  return Rows{std::vector<float>(static_cast<std::size_t>(c.count * c.in_dim + 1), test::kPoison),
              std::vector<std::int32_t>(static_cast<std::size_t>(c.count + 1), -1)};
}

SyntheticSpec spec_for(const Case& c, const std::vector<float>& teacher) {
  return SyntheticSpec{99, 0xFEA7u + (1ull << 33), c.in_dim, c.classes, teacher.data()};
}

// The definition, one element and one sample at a time.
Rows definition(const SyntheticSpec& s, const Case& c) {
  Rows r{std::vector<float>(static_cast<std::size_t>(c.count * c.in_dim)),
         std::vector<std::int32_t>(static_cast<std::size_t>(c.count))};
  for (std::int64_t i = 0; i < c.count; ++i) {
    float* row = r.x.data() + i * c.in_dim;
    for (std::int64_t j = 0; j < c.in_dim; ++j) {
      row[j] = portable_normal01(s.seed, s.stream, static_cast<std::uint64_t>((c.first + i) * c.in_dim + j));
    }
    r.y[static_cast<std::size_t>(i)] = teacher_label(s.teacher, row, c.in_dim, c.classes);
  }
  return r;
}

void expect_same_bits(const Rows& got, const Rows& want, const std::string& what) {
  for (std::size_t e = 0; e < want.x.size(); ++e) {
    ASSERT_EQ(float_bits(got.x[e]), float_bits(want.x[e])) << what << ": x element " << e;
  }
  for (std::size_t s = 0; s < want.y.size(); ++s) ASSERT_EQ(got.y[s], want.y[s]) << what << ": label " << s;
  EXPECT_TRUE(std::isnan(got.x.back())) << what << ": wrote past x";
  EXPECT_EQ(got.y.back(), -1) << what << ": wrote past y";
}

TEST(SyntheticRows, HostRowsAreTheDefinitionBitForBit) {
  auto ops = make_cpu_ops(1);
  for (const Case& c : kCases) {
    const auto teacher = test::random_normal(c.classes * c.in_dim, 40 + static_cast<std::uint64_t>(c.in_dim));
    const SyntheticSpec s = spec_for(c, teacher);
    const Rows want = definition(s, c);
    Rows got = poisoned_rows(c);
    synthetic_rows_host(s, c.first, c.count, got.x.data(), got.y.data());
    expect_same_bits(got, want, "synthetic_rows_host, " + name(c));
    Rows via_ops = poisoned_rows(c);
    ops->synthetic_rows(s, c.first, c.count, via_ops.x.data(), via_ops.y.data());
    expect_same_bits(via_ops, want, "CpuOps::synthetic_rows, " + name(c));
  }
}

// Features against float64 Box-Muller on the same Philox words; labels against the float64 arg-max
// of the float rows. A float sum of n products is within gamma_n = n u / (1 - n u) (u = 2^-24) of
// sum |w x| of the exact sum (Higham, Accuracy and Stability, 3.1): where the float64 best beats the
// runner-up by more than twice that, the float label must agree. Most samples are that clear.
TEST(SyntheticRows, RowsMatchAFloat64Reference) {
  const Case c{777, 500, 64, 10};
  const auto teacher = test::random_normal(c.classes * c.in_dim, 77);
  const SyntheticSpec s = spec_for(c, teacher);
  Rows got = poisoned_rows(c);
  synthetic_rows_host(s, c.first, c.count, got.x.data(), got.y.data());
  const double u = std::ldexp(1.0, -24);
  const double gamma = static_cast<double>(c.in_dim) * u / (1.0 - static_cast<double>(c.in_dim) * u);
  std::int64_t decided = 0;
  for (std::int64_t i = 0; i < c.count; ++i) {
    const float* row = got.x.data() + i * c.in_dim;
    for (std::int64_t j = 0; j < c.in_dim; ++j) {
      const core::Philox4x32 r =
          core::philox_block(s.seed, s.stream, static_cast<std::uint64_t>((c.first + i) * c.in_dim + j));
      const double u1 = std::ldexp(static_cast<double>((r.v[0] >> 8) + 1), -24);
      const double u2 = std::ldexp(static_cast<double>(r.v[1] >> 8), -24);
      const double ref = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
      ASSERT_NEAR(row[j], ref, 1.6e-6) << "sample " << i << " feature " << j;  // portable_math.hpp's bound
    }
    double best = -INFINITY, second = -INFINITY, slack = 0.0;
    std::int32_t best_c = -1;
    for (std::int64_t k = 0; k < c.classes; ++k) {
      double score = 0.0, abs_sum = 0.0;
      for (std::int64_t j = 0; j < c.in_dim; ++j) {
        const double t = static_cast<double>(teacher[static_cast<std::size_t>(k * c.in_dim + j)]) * row[j];
        score += t;
        abs_sum += std::fabs(t);
      }
      slack = std::fmax(slack, gamma * abs_sum);
      if (score > best) {
        second = best;
        best = score;
        best_c = static_cast<std::int32_t>(k);
      } else if (score > second) {
        second = score;
      }
    }
    if (best - second > 2.0 * slack) {
      ++decided;
      EXPECT_EQ(got.y[static_cast<std::size_t>(i)], best_c) << "sample " << i;
    }
  }
  EXPECT_GT(decided, c.count * 9 / 10);
}

TEST(SyntheticRows, BadArgumentsThrow) {
  const std::vector<float> teacher(30, 1.0f);
  std::vector<float> x(30);
  std::vector<std::int32_t> y(3);
  const SyntheticSpec ok{1, 2, 10, 3, teacher.data()};
  EXPECT_NO_THROW(synthetic_rows_host(ok, 0, 3, x.data(), y.data()));
  EXPECT_THROW(synthetic_rows_host(ok, -1, 1, x.data(), y.data()), core::Error);
  EXPECT_THROW(synthetic_rows_host(ok, 0, -1, x.data(), y.data()), core::Error);
  EXPECT_THROW(synthetic_rows_host(ok, INT64_MAX / 10, 1, x.data(), y.data()), core::Error);  // counter overflow
  SyntheticSpec bad = ok;
  bad.classes = 1;
  EXPECT_THROW(synthetic_rows_host(bad, 0, 1, x.data(), y.data()), core::Error);
  bad = ok;
  bad.in_dim = 0;
  EXPECT_THROW(synthetic_rows_host(bad, 0, 1, x.data(), y.data()), core::Error);
  bad = ok;
  bad.teacher = nullptr;
  EXPECT_THROW(synthetic_rows_host(bad, 0, 1, x.data(), y.data()), core::Error);
  EXPECT_NO_THROW(synthetic_rows_host(bad, 0, 0, nullptr, nullptr));  // nothing to make, nothing read
}

}  // namespace
}  // namespace microddp::kernels
