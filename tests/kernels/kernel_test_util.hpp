// kernel_test_util.hpp — shared pieces of the kernel tests: deterministic random inputs, output
// poisoning, and float64 reference implementations of the ops (the "truth" the fp32 ops are checked
// against). Header-only; each test binary includes what it needs.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/rng.hpp"

namespace microddp::kernels::test {

// Normal(0, sigma) values from Philox: a pure function of (seed, stream), so each test gets its own
// fresh inputs and every run sees the same ones.
inline std::vector<float> random_normal(std::int64_t n, std::uint64_t stream, float sigma = 1.0f,
                                        std::uint64_t seed = 20240611) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = sigma * core::normal01(seed, stream, static_cast<std::uint64_t>(i));
  return v;
}

inline std::vector<std::int32_t> random_labels(std::int64_t n, std::int64_t classes, std::uint64_t stream) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t bits = core::random_bits(7, stream, static_cast<std::uint64_t>(i));
    v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(bits % static_cast<std::uint32_t>(classes));
  }
  return v;
}

// Outputs are filled with NaN first: an element an op forgot to write stays NaN and fails every
// comparison (NaN != anything).
inline constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();
inline std::vector<float> poisoned(std::int64_t n) { return std::vector<float>(static_cast<std::size_t>(n), kPoison); }

// ---- float64 references ---------------------------------------------------------------------
// Element (i, j) of op(X) for a row-major X stored as (rows, cols) = trans ? (c, r) : (r, c).
template <typename T>
double op_at(const T* x, bool trans, std::int64_t i, std::int64_t j, std::int64_t op_cols, std::int64_t op_rows) {
  return trans ? static_cast<double>(x[j * op_rows + i]) : static_cast<double>(x[i * op_cols + j]);
}

// C = alpha op(A) op(B) + beta C in double, row-major (the definition, as a triple loop).
// Also returns, per element, sum_p |alpha a_ip b_pj| + |beta c_ij| (for error bounds) in abs_sum.
inline std::vector<double> gemm_ref(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                                    const float* a, const float* b, double beta, const float* c,
                                    std::vector<double>* abs_sum = nullptr) {
  std::vector<double> out(static_cast<std::size_t>(m * n));
  if (abs_sum != nullptr) abs_sum->assign(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0.0, s_abs = 0.0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double t = op_at(a, ta, i, p, k, m) * op_at(b, tb, p, j, n, k);
        s += t;
        s_abs += std::fabs(t);
      }
      const double c0 = beta == 0.0 ? 0.0 : beta * static_cast<double>(c[i * n + j]);
      out[static_cast<std::size_t>(i * n + j)] = alpha * s + c0;
      if (abs_sum != nullptr)
        (*abs_sum)[static_cast<std::size_t>(i * n + j)] = std::fabs(alpha) * s_abs + std::fabs(c0);
    }
  }
  return out;
}

// Softmax cross-entropy of one row in double: returns -log softmax(x)[label], writes softmax to p.
inline double xent_row_ref(const double* x, std::int64_t classes, std::int32_t label, double* p) {
  double mx = x[0];
  for (std::int64_t j = 1; j < classes; ++j) mx = std::fmax(mx, x[j]);
  double s = 0.0;
  for (std::int64_t j = 0; j < classes; ++j) s += std::exp(x[j] - mx);
  if (p != nullptr) {
    for (std::int64_t j = 0; j < classes; ++j) p[j] = std::exp(x[j] - mx) / s;
  }
  return (mx - x[label]) + std::log(s);
}

}  // namespace microddp::kernels::test
