// orthonormalize.cpp — two passes of modified Gram-Schmidt in double (see orthonormalize.hpp).
#include "ddp/compression/orthonormalize.hpp"

#include <cmath>
#include <vector>

#include "core/error.hpp"

namespace microddp::ddp {

namespace {
// Relative size below which a column counts as dependent on the earlier ones (see the header):
// far above double rounding (~1e-16 per operation) yet far below any real direction of a float matrix.
constexpr double kDependentColumn = 1e-10;
}  // namespace

void orthonormalize_columns(float* p, std::int64_t rows, std::int64_t cols) {
  MDDP_CHECK(rows >= 0 && cols >= 0 && cols <= rows, "orthonormalize: (" << rows << ", " << cols << ") is not tall");
  // Column j of the row-major matrix is p[i * cols + j]; copy to contiguous double columns.
  thread_local std::vector<double> a;  // grows once to the largest matrix, then reused
  a.resize(static_cast<std::size_t>(rows * cols));
  for (std::int64_t j = 0; j < cols; ++j) {
    for (std::int64_t i = 0; i < rows; ++i) a[static_cast<std::size_t>(j * rows + i)] = p[i * cols + j];
  }
  auto col = [&](std::int64_t j) { return a.data() + j * rows; };
  auto dot = [&](const double* x, const double* y) {
    double s = 0.0;
    for (std::int64_t i = 0; i < rows; ++i) s += x[i] * y[i];
    return s;
  };
  for (std::int64_t j = 0; j < cols; ++j) {
    double* v = col(j);
    const double before = std::sqrt(dot(v, v));
    for (int pass = 0; pass < 2; ++pass) {
      for (std::int64_t k = 0; k < j; ++k) {
        const double* q = col(k);
        const double c = dot(q, v);
        for (std::int64_t i = 0; i < rows; ++i) v[i] -= c * q[i];
      }
    }
    const double norm = std::sqrt(dot(v, v));
    const double inv = (norm > kDependentColumn * before && norm > 0.0) ? 1.0 / norm : 0.0;
    for (std::int64_t i = 0; i < rows; ++i) v[i] *= inv;
  }
  for (std::int64_t j = 0; j < cols; ++j) {
    for (std::int64_t i = 0; i < rows; ++i)
      p[i * cols + j] = static_cast<float>(a[static_cast<std::size_t>(j * rows + i)]);
  }
}

}  // namespace microddp::ddp
