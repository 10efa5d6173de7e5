// grade_model.cpp — the grader of lab 08 (performance analysis: ring_all_reduce_time,
// fit_ring_all_reduce, break_even_rows_per_rank; docs/labs/08-performance-model).
//
// Pure arithmetic, no messages: it runs the same on every rank of an mpirun and needs no MPI.
// Checks, each against a closed form AND against src/perf, the functions `microddp analyze` uses:
//   * the ring all-reduce time for n = 1 .. 64 and 0 B .. 192 MiB (relative 1e-12: the same formula,
//     a few roundings apart in another association order);
//   * the fit recovers α and β from exact synthetic sweeps (relative 1e-9, see kFitTol), ignores
//     1-rank points, refuses points that cannot separate α from β (std::invalid_argument);
//   * on a sweep with ±5% deterministic noise it equals perf::fit_alpha_beta (the same weighted least
//     squares; relative 1e-9) — exact data cannot tell a weighted fit from an unweighted one, noise can;
//   * the break-even rows per rank equals floor(T / (c(n-1))) + 1, including the exact tie (equal
//     times are not "sooner") and T = 0 (b = 1), and src/perf's step model (predict_step, flat) agrees:
//     n ranks at b rows per rank beat one rank at n·b rows, and at b - 1 they do not.
// The first failure prints what was asked, what was expected, what came back, and a hint; exit 1.
// Exit 0 and "PASS" when everything holds.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "labs/lab_api.hpp"
#include "model/param_layout.hpp"
#include "perf/alpha_beta.hpp"
#include "perf/step_model.hpp"

namespace {

namespace labs = microddp::labs;
namespace perf = microddp::perf;

// Same formula, other association orders: a few ulps (1 ulp = 1.1e-16 relative).
constexpr double kTimeTol = 1e-12;
// Exact synthetic points carry only their rounding (1e-16 relative). In the weighted least squares
// every row is (u, 1 - u) in units of α and β, u = the latency share of that point, spread over
// [0, 1] by a 4 B .. 64 MiB sweep: the condition number of that scaled design is 1.13-1.16 for the
// sweeps below (n = {2}, {4}, {2, 4}, {2, 3, 4, 8}), 1.3 squared in the normal equations, so sums
// of ~50 terms and a 2x2 solve leave ~1e-14. 1e-9 leaves room for any sound solver (Cramer's rule,
// elimination, QR); a wrong formula is off by percent. The same holds for two solvers of the same
// noisy system.
constexpr double kFitTol = 1e-9;

int failures = 0;
void fail(const std::string& what) {
  if (failures++ == 0) std::printf("FAIL: %s\n", what.c_str());
}
std::string fmt(const char* f, auto... args) {
  char buf[768];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}
double rel(double got, double want) { return want == 0 ? std::abs(got) : std::abs(got - want) / std::abs(want); }

double closed_form(double alpha, double beta, int n, double bytes) {
  return n <= 1 ? 0.0 : 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * bytes * beta;
}
double production(double alpha, double beta, int n, double bytes) {
  return perf::AlphaBeta{alpha, beta, 0}.time_s(
      perf::cost_coefficients(perf::Collective::AllReduce, perf::Algorithm::Ring, n, bytes));
}

// A sweep as `bench collectives` takes it: 4 B, 16 B, ... up to 64 MiB, at each rank count.
std::vector<labs::LabTiming> sweep(const std::vector<int>& ranks, double alpha, double beta, double noise) {
  std::vector<labs::LabTiming> pts;
  std::uint64_t state = 12345;  // deterministic noise: a fixed LCG, the same on every run
  for (int n : ranks) {
    for (double s = 4; s <= 64.0 * (1 << 20); s *= 4) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const double u = static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
      pts.push_back({n, s, closed_form(alpha, beta, n, s) * (1.0 + noise * (2 * u - 1))});
    }
  }
  return pts;
}

void grade_time() {
  const double alpha = 5e-6, beta = 2.5e-10;  // 5 µs, 4 GB/s
  for (int n : {1, 2, 3, 4, 7, 64}) {
    for (double bytes : {0.0, 4.0, 1000.0, 1048576.0, 3.0 * (1 << 26)}) {
      const double got = labs::ring_all_reduce_time({alpha, beta}, n, bytes);
      const double want = closed_form(alpha, beta, n, bytes), prod = production(alpha, beta, n, bytes);
      if (rel(want, prod) > kTimeTol) fail(fmt("grader bug: closed form %.17g vs src/perf %.17g", want, prod));
      if (!(rel(got, want) <= kTimeTol)) {
        fail(
            fmt("ring_all_reduce_time(alpha %g s, beta %g s/B, n %d, %.0f bytes): expected %.9g s "
                "(2(n-1)·alpha = %.9g plus 2(n-1)/n·bytes·beta = %.9g), got %.9g s. Hint: %s",
                alpha, beta, n, bytes, want, n <= 1 ? 0.0 : 2.0 * (n - 1) * alpha,
                want - (n <= 1 ? 0.0 : 2.0 * (n - 1) * alpha), got,
                n == 1 ? "one rank sends nothing: 0" : "each of the 2(n-1) steps sends one message of bytes/n"));
        return;
      }
    }
  }
}

void check_fit(const char* what, const std::vector<labs::LabTiming>& pts, double alpha, double beta, const char* hint) {
  labs::LabAlphaBeta got;
  try {
    got = labs::fit_ring_all_reduce(pts);
  } catch (const std::exception& e) {
    fail(fmt("fit_ring_all_reduce on %s threw: %s", what, e.what()));
    return;
  }
  if (!(rel(got.alpha_s, alpha) <= kFitTol && rel(got.beta_s_per_byte, beta) <= kFitTol)) {
    fail(
        fmt("fit_ring_all_reduce on %s (%zu points): expected alpha %.12g s, beta %.12g s/B; got alpha %.12g, "
            "beta %.12g (relative errors %.2g, %.2g; allowed %.0g). Hint: %s",
            what, pts.size(), alpha, beta, got.alpha_s, got.beta_s_per_byte, rel(got.alpha_s, alpha),
            rel(got.beta_s_per_byte, beta), kFitTol, hint));
  }
}

// The unweighted least-squares answer, to recognise it in a failure message.
labs::LabAlphaBeta unweighted(const std::vector<labs::LabTiming>& pts) {
  double saa = 0, sab = 0, sbb = 0, sat = 0, sbt = 0;
  for (const auto& p : pts) {
    if (p.ranks < 2) continue;
    const double n = p.ranks, a = 2 * (n - 1), b = 2 * (n - 1) / n * p.bytes;
    saa += a * a, sab += a * b, sbb += b * b, sat += a * p.seconds, sbt += b * p.seconds;
  }
  const double det = saa * sbb - sab * sab;
  return {(sat * sbb - sbt * sab) / det, (sbt * saa - sat * sab) / det};
}

void grade_fit() {
  const double alpha = 3e-6, beta = 4e-10;
  check_fit("exact points at n = 2", sweep({2}, alpha, beta, 0), alpha, beta,
            "a = 2(n-1), b = 2(n-1)/n·bytes per point, then solve the 2x2 normal equations");
  check_fit("exact points at n = 2, 3, 4, 8", sweep({2, 3, 4, 8}, alpha, beta, 0), alpha, beta,
            "the coefficients depend on each point's own n");
  auto with_one = sweep({4}, alpha, beta, 0);
  with_one.push_back({1, 1024, 1e-6});  // one rank: says nothing about α or β
  check_fit("exact points at n = 4 plus a 1-rank point", with_one, alpha, beta, "skip points with ranks < 2");
  if (failures) return;

  const auto noisy = sweep({2, 4}, alpha, beta, 0.05);
  std::vector<perf::Sample> samples;
  for (const auto& p : noisy) samples.push_back({p.ranks, p.bytes, p.seconds});
  const perf::FitResult prod = perf::fit_alpha_beta(perf::Collective::AllReduce, perf::Algorithm::Ring, samples);
  if (!(prod.model.alpha_s > 0 && prod.model.beta_s_per_byte > 0)) {
    fail("grader bug: src/perf clamped the noisy fit; choose other noise");
    return;
  }
  const labs::LabAlphaBeta uw = unweighted(noisy);
  labs::LabAlphaBeta got;
  try {
    got = labs::fit_ring_all_reduce(noisy);
  } catch (const std::exception& e) {
    fail(fmt("fit_ring_all_reduce on a noisy sweep threw: %s", e.what()));
    return;
  }
  if (!(rel(got.alpha_s, prod.model.alpha_s) <= kFitTol &&
        rel(got.beta_s_per_byte, prod.model.beta_s_per_byte) <= kFitTol)) {
    const bool looks_unweighted =
        rel(got.alpha_s, uw.alpha_s) < 1e-6 && rel(got.beta_s_per_byte, uw.beta_s_per_byte) < 1e-6;
    fail(
        fmt("fit_ring_all_reduce on a sweep with ±5%% noise (n = 2, 4; 4 B .. 64 MiB): src/perf's "
            "perf::fit_alpha_beta gives alpha %.12g s, beta %.12g s/B; yours alpha %.12g, beta %.12g. Hint: %s",
            prod.model.alpha_s, prod.model.beta_s_per_byte, got.alpha_s, got.beta_s_per_byte,
            looks_unweighted ? "that is the UNWEIGHTED least-squares answer: weight every point by w = 1/t^2, or "
                               "the 64 MiB points decide alpha and the small sizes are ignored"
                             : "minimise the relative error: weights w = 1/t^2 in every sum"));
    return;
  }
  // One size at one rank count: a·α + b·β = t has a line of solutions.
  std::vector<labs::LabTiming> one(5, labs::LabTiming{4, 65536, 1e-4});
  try {
    const labs::LabAlphaBeta r = labs::fit_ring_all_reduce(one);
    fail(
        fmt("fit_ring_all_reduce on 5 points of the same size and rank count returned alpha %g, beta %g: expected "
            "std::invalid_argument (any alpha, beta on a line fit them). Hint: throw when det <= 1e-12·Saa·Sbb",
            r.alpha_s, r.beta_s_per_byte));
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    fail(fmt("fit_ring_all_reduce on points of one size threw, but not std::invalid_argument: %s", e.what()));
  }
}

// src/perf's step model, flat strategy (one all-reduce after backward, nothing hidden), no straggler.
bool ddp_sooner_in_src_perf(const perf::StepProfile& at_one_row, int n, std::int64_t b, double alpha, double beta) {
  const perf::AllReduceTime ar_n = [&](double bytes) { return production(alpha, beta, n, bytes); };
  const perf::AllReduceTime ar_1 = [](double) { return 0.0; };
  const double tn = perf::predict_step(perf::rescale_rows(at_one_row, b), microddp::ddp::Strategy::Flat, ar_n).step_s;
  const double t1 =
      perf::predict_step(perf::rescale_rows(at_one_row, n * b), microddp::ddp::Strategy::Flat, ar_1).step_s;
  return tn < t1;
}

void grade_break_even() {
  // A real model's gradient (width 256, depth 4: 0.8 MiB of fp32 gradients, alignment included).
  microddp::model::MlpConfig mc;
  mc.width = 256;
  mc.depth = 4;
  perf::StepProfile prof;
  prof.params = microddp::model::param_layout(mc);
  const double grad_bytes =
      static_cast<double>(microddp::model::flat_count(prof.params) * microddp::model::kParamElementBytes);
  struct Case {
    double alpha, beta;
    int n;
    double bytes, c;  // c: compute seconds per row
    const char* note;
  };
  const std::vector<Case> cases = {
      {5e-6, 2.5e-10, 2, grad_bytes, 37e-6, "shared memory, a small model"},
      {5e-6, 2.5e-10, 4, grad_bytes, 37e-6, "the same at n = 4"},
      {20e-6, 8.0 / 10e9, 16, grad_bytes, 37e-6, "a 10 Gbit/s network, n = 16"},
      {20e-6, 8.0 / 10e9, 3, grad_bytes, 1.3e-3, "a slow model (1.3 ms per row)"},
      {0.0, 0.0, 8, grad_bytes, 1e-4, "free communication: b = 1 already pays"},
      // 2^-9 s of all-reduce, 2^-11 s per row, n = 2: b = 4 is an exact tie (2^-8 s both ways)
      {std::ldexp(1.0, -10), 0.0, 2, grad_bytes, std::ldexp(1.0, -11), "an exact tie at b = 4"},
  };
  for (const Case& k : cases) {
    const double t = production(k.alpha, k.beta, k.n, k.bytes);
    const double x = t / (k.c * (k.n - 1));
    const auto want = static_cast<std::int64_t>(std::floor(x)) + 1;
    std::int64_t got = 0;
    try {
      got = labs::break_even_rows_per_rank({k.alpha, k.beta}, k.n, k.bytes, k.c);
    } catch (const std::exception& e) {
      fail(fmt("break_even_rows_per_rank threw: %s", e.what()));
      return;
    }
    // src/perf agrees on the answer (outside exact ties, where rounding may go either way).
    if (x != std::floor(x)) {
      prof.rows_per_rank = 1;
      prof.forward_s = k.c / 3;
      prof.backward_s = 2 * k.c / 3;
      prof.optimizer_s = 1e-3;
      perf::fill_layer_times_from_params(prof);
      if (!ddp_sooner_in_src_perf(prof, k.n, want, k.alpha, k.beta) ||
          (want > 1 && ddp_sooner_in_src_perf(prof, k.n, want - 1, k.alpha, k.beta)))
        fail(fmt("grader bug: src/perf's step model disagrees with b = %lld (%s)", static_cast<long long>(want),
                 k.note));
    }
    if (got != want) {
      fail(fmt(
          "break_even_rows_per_rank(alpha %g s, beta %g s/B, n %d, gradient %.0f bytes, %g s per row) [%s]: "
          "expected %lld rows per rank (T = %.6g s; T / (c(n-1)) = %.6g), got %lld. Hint: %s",
          k.alpha, k.beta, k.n, k.bytes, k.c, k.note, static_cast<long long>(want), t, x, static_cast<long long>(got),
          got == want - 1 ? "'sooner' is strict: at b = T/(c(n-1)) both take the same time"
                          : "solve c·b + T < c·n·b for b: b > T / (c·(n-1)), the smallest whole such b, at least 1"));
      return;
    }
  }
}

}  // namespace

int main() {
  std::printf("grading lab 08-performance-model\n");
  try {
    grade_time();
    if (!failures) grade_fit();
    if (!failures) grade_break_even();
  } catch (const std::exception& e) {
    fail(std::string("a lab function threw: ") + e.what());
  }
  if (failures) return 1;
  std::printf(
      "PASS: lab 08-performance-model: ring time (30 cases), fits (exact, noisy vs src/perf, singular), "
      "break-even (6 cases, checked with src/perf's step model)\n");
  return 0;
}
