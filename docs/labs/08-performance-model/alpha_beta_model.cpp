// Lab 08 — performance analysis: the α-β model of the ring all-reduce, fitted to measurements, and
// when data parallelism pays.
// Read docs/labs/08-performance-model/README.md first. Build: cmake --build build; grade:
// ctest --test-dir build -L lab -R model (after configuring with -DMICRODDP_LAB_GRADERS=ON); run on
// real measurements: build/microddp lab-model --bench bench.json.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

// The time of a ring all-reduce of `bytes` bytes over `ranks` ranks: reduce-scatter and all-gather
// are n-1 steps each, and every step sends one chunk of bytes/n to the next rank:
//   T = 2(n-1)·α + 2(n-1)/n·bytes·β       (one rank: nothing to send, T = 0)
double ring_all_reduce_time(const LabAlphaBeta& m, int ranks, double bytes) {
  // TODO(lab 08): write the model here, then delete the next line.
  lab_todo("08-performance-model", "ring_all_reduce_time", "docs/labs/08-performance-model/alpha_beta_model.cpp");
  (void)m;
  (void)ranks;
  (void)bytes;
  return 0;
}

// α and β from measured ring all-reduces. Every point says t ≈ a·α + b·β with a = 2(n-1) and
// b = 2(n-1)/n·bytes (the coefficients above). Minimise the RELATIVE error,
//   E(α, β) = Σ w·(a·α + b·β - t)²,  w = 1/t²,
// (a sweep spans 4 B to 64 MiB: unweighted, the largest sizes would decide everything). Setting
// dE/dα = dE/dβ = 0 gives two linear equations, the normal equations:
//   Saa·α + Sab·β = Sat,   Sab·α + Sbb·β = Sbt,   with Saa = Σ w·a², Sab = Σ w·a·b, Sbb = Σ w·b²,
//                                                   Sat = Σ w·a·t, Sbt = Σ w·b·t;
// solve them (Cramer's rule: det = Saa·Sbb - Sab²). Skip points with ranks < 2 (a = b = 0). When
// det <= 1e-12·Saa·Sbb the points cannot tell α from β (e.g. one size only): throw
// std::invalid_argument saying so.
LabAlphaBeta fit_ring_all_reduce(const std::vector<LabTiming>& points) {
  // TODO(lab 08): write the fit here, then delete the next line.
  lab_todo("08-performance-model", "fit_ring_all_reduce", "docs/labs/08-performance-model/alpha_beta_model.cpp");
  (void)points;
  return {};
}

// When does data parallelism pay? One rank computing n·b rows takes c·n·b seconds (c = compute time
// per row: data + forward + backward). n ranks computing b rows each take c·b, plus one all-reduce
// of the gradient, T(n, grad_bytes), that nothing hides (the optimizer runs on every rank in both
// cases and cancels). Return the smallest whole b >= 1 with
//   c·b + T(n, grad_bytes) < c·n·b.
std::int64_t break_even_rows_per_rank(const LabAlphaBeta& m, int ranks, double grad_bytes, double compute_s_per_row) {
  // TODO(lab 08): write the break-even here, then delete the next line.
  lab_todo("08-performance-model", "break_even_rows_per_rank", "docs/labs/08-performance-model/alpha_beta_model.cpp");
  (void)m;
  (void)ranks;
  (void)grad_bytes;
  (void)compute_s_per_row;
  return 0;
}

}  // namespace microddp::labs
