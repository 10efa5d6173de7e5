// Reference solution of lab 08 (docs/labs/08-performance-model). Try the lab before reading this.
// src/perf/alpha_beta.cpp does the same for every algorithm and collective (cost_coefficients), and
// adds what a real sweep needs: α, β >= 0 (a negative fit is clamped and the other refitted), size
// regimes chosen by BIC, and fit-quality numbers.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

double ring_all_reduce_time(const LabAlphaBeta& m, int ranks, double bytes) {
  if (ranks <= 1) return 0.0;
  const double n = ranks;
  return 2 * (n - 1) * m.alpha_s + 2 * (n - 1) / n * bytes * m.beta_s_per_byte;
}

LabAlphaBeta fit_ring_all_reduce(const std::vector<LabTiming>& points) {
  double saa = 0, sab = 0, sbb = 0, sat = 0, sbt = 0;
  for (const LabTiming& p : points) {
    if (p.ranks < 2) continue;
    const double n = p.ranks, a = 2 * (n - 1), b = 2 * (n - 1) / n * p.bytes, w = 1.0 / (p.seconds * p.seconds);
    saa += w * a * a;
    sab += w * a * b;
    sbb += w * b * b;
    sat += w * a * p.seconds;
    sbt += w * b * p.seconds;
  }
  const double det = saa * sbb - sab * sab;
  if (!(det > 1e-12 * saa * sbb))
    throw std::invalid_argument(
        "alpha-beta fit: the points cannot separate alpha from beta (one size per rank count?)");
  return {(sat * sbb - sbt * sab) / det, (sbt * saa - sat * sab) / det};
}

std::int64_t break_even_rows_per_rank(const LabAlphaBeta& m, int ranks, double grad_bytes, double compute_s_per_row) {
  // c·b·(n-1) > T  <=>  b > T / (c·(n-1)): the smallest whole b is floor of that, plus one.
  const double x = ring_all_reduce_time(m, ranks, grad_bytes) / (compute_s_per_row * (ranks - 1));
  return static_cast<std::int64_t>(std::floor(x)) + 1;
}

}  // namespace microddp::labs
