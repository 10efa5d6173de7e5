// Reference solution of lab 10 (docs/labs/10-powersgd): one PowerSGD step of one matrix with error
// feedback, the production algorithm (ddp/compression/powersgd_compressor.hpp) written as loops.
// Sums in double: a few roundings fewer than fp32 GEMMs; the grader's tolerance does not need them.
#include <cstdint>

#include "labs/lab_api.hpp"

namespace microddp::labs {

void powersgd_step(PowerSgdContext& ctx, const LabMatrix& m) {
  const std::int64_t rows = m.rows, cols = m.cols, r = m.rank;
  // M = G + E: this step's gradient plus what earlier steps left out, kept in the residual buffer
  // (it becomes the new error below). Without error feedback M is the gradient itself.
  float* M = m.grad;
  if (m.residual != nullptr) {
    for (std::int64_t i = 0; i < rows * cols; ++i) m.residual[i] += m.grad[i];
    M = m.residual;
  }
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
  // E = M - P Q^T with THIS rank's Q, before the all-reduce: what this rank's projection left out.
  if (m.residual != nullptr) {
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t k = 0; k < cols; ++k) {
        double s = 0;
        for (std::int64_t j = 0; j < r; ++j) s += static_cast<double>(m.p[i * r + j]) * m.q[k * r + j];
        m.residual[i * cols + k] -= static_cast<float>(s);
      }
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
