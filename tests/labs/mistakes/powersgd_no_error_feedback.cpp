// A typical wrong answer to lab 10 (docs/labs/10-powersgd): PowerSGD without error feedback — the
// residual is neither added to the gradient nor updated, so what the rank-r approximation leaves
// out is lost for good. The decoded gradient of the first step is still right (the residual starts
// at zero); the residual after it is not. labs.powersgd_grader_catches_no_error_feedback proves the
// grader says so.
#include <cstdint>

#include "labs/lab_api.hpp"

namespace microddp::labs {

void powersgd_step(PowerSgdContext& ctx, const LabMatrix& m) {
  const std::int64_t rows = m.rows, cols = m.cols, r = m.rank;
  float* M = m.grad;  // WRONG: the residual is never added (nor updated): no error feedback
  // P = M Q (rows, r). Every rank uses the same Q, so the sum of the P's is (sum of the M's) Q.
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < r; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < cols; ++k) s += static_cast<double>(M[i * cols + k]) * m.q[k * r + j];
      m.p[i * r + j] = static_cast<float>(s);
    }
  }
  ctx.all_reduce_sum(m.p, rows * r);
  // After the all-reduce: every rank holds the same P, so every rank gets the same basis.
  ctx.orthonormalize(m.p, rows, r);
  // Q = M^T P (cols, r): this rank's share; the projection of its M onto the basis is P Q^T.
  for (std::int64_t k = 0; k < cols; ++k) {
    for (std::int64_t j = 0; j < r; ++j) {
      double s = 0;
      for (std::int64_t i = 0; i < rows; ++i) s += static_cast<double>(M[i * cols + k]) * m.p[i * r + j];
      m.q[k * r + j] = static_cast<float>(s);
    }
  }
  ctx.all_reduce_sum(m.q, cols * r);  // now Q = (sum of the M's)^T P
  // G = P Q^T = P P^T (sum of the M's): the summed gradient projected onto P's columns.
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t k = 0; k < cols; ++k) {
      double s = 0;
      for (std::int64_t j = 0; j < r; ++j) s += static_cast<double>(m.p[i * r + j]) * m.q[k * r + j];
      m.grad[i * cols + k] = static_cast<float>(s);
    }
  }
}

}  // namespace microddp::labs
