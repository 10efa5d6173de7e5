// lab_model_command.cpp — `microddp lab-model`, lab 08's seam (docs/labs/08-performance-model): the
// student's α-β functions (labs/lab_api.hpp) on real measurements, printed next to src/perf's.
//
//   microddp lab-model --bench bench.json [--backend ring] [--metrics m.jsonl] [--ranks 2,4,8,16,64]
//
// Reads the all-reduce rows of one backend from `bench collectives` output, fits them with the
// student's fit_ring_all_reduce and with perf::fit_alpha_beta (one line) and fit_alpha_beta_regimes
// (what `analyze` predicts with), and prints both fits and every measured point with each
// prediction. With --metrics (a 1-rank `train --metrics` record) it also predicts the gradient's
// all-reduce at each --ranks and the break-even rows per rank: the student's answer, and src/perf's
// step model searched for the same answer (flat: nothing hidden, which the lab's formula assumes;
// bucketed: backward hides part of the all-reduce).
// No messages between ranks: rank 0 prints, the others return.
#include "app/lab_commands.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "labs/lab_api.hpp"
#include "model/param_layout.hpp"
#include "perf/analysis.hpp"
#include "perf/bench_rows.hpp"
#include "perf/run_record.hpp"
#include "perf/step_model.hpp"

namespace microddp::app {

namespace {

using core::kMiB;

// src/perf's answer to the lab's question, by search: the smallest b whose predicted step on n ranks
// is shorter than one rank's at n·b rows (predict_step, `strategy`), or 0 above `limit`.
std::int64_t src_perf_break_even(const perf::StepProfile& prof, ddp::Strategy strategy, int n,
                                 const perf::AllReduceTime& ar_n, std::int64_t limit) {
  const perf::AllReduceTime none = [](double) { return 0.0; };
  auto sooner = [&](std::int64_t b) {
    return perf::predict_step(perf::rescale_rows(prof, b), strategy, ar_n).step_s <
           perf::predict_step(perf::rescale_rows(prof, n * b), strategy, none).step_s;
  };
  std::int64_t hi = 1;
  while (!sooner(hi)) {
    if (hi > limit) return 0;
    hi *= 2;
  }
  std::int64_t lo = hi / 2;  // !sooner(lo) unless lo == 0
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (sooner(mid) ? hi : lo) = mid;
  }
  return hi;
}

class LabModelCommand final : public Command {
 public:
  explicit LabModelCommand(CLI::App* sub) {
    sub->add_option("--bench", bench_path_, "`microddp bench collectives --json` (or CSV) output to fit")->required();
    sub->add_option("--backend", backend_, "Which backend's all-reduce rows to fit (a ring: ring, mpi, lab-ring)");
    sub->add_option("--metrics", metrics_path_,
                    "A 1-rank `train --metrics` record: predict its gradient's all-reduce and the break-even batch");
    sub->add_option("--ranks", ranks_, "Rank counts to predict at")->delimiter(',');
  }
  void validate() override {
    MDDP_USAGE_CHECK(!ranks_.empty(), "lab-model: --ranks needs at least one rank count");
    for (int n : ranks_) MDDP_USAGE_CHECK(n >= 2, "lab-model: --ranks must be >= 2, got " << n);
  }
  int run(const comm::MpiRuntime& mpi) override {
    if (mpi.rank() != 0) return 0;
    const perf::Algorithm algo = perf::algorithm_for_backend(backend_);
    MDDP_USAGE_CHECK(algo == perf::Algorithm::Ring, "lab-model: the lab models a ring; src/perf models backend '"
                                                        << backend_ << "' as " << perf::algorithm_name(algo)
                                                        << " (use --backend ring, mpi or lab-ring)");
    std::vector<labs::LabTiming> points;
    std::vector<perf::Sample> samples;
    std::set<std::string> backends;
    for (const perf::BenchRow& r : perf::read_bench_rows(bench_path_)) {
      perf::Collective c;
      if (!perf::parse_collective(r.collective, c) || c != perf::Collective::AllReduce) continue;
      backends.insert(r.backend);
      if (r.backend != backend_ || r.ranks < 2) continue;
      points.push_back({r.ranks, r.bytes, r.seconds});
      samples.push_back({r.ranks, r.bytes, r.seconds});
    }
    std::string have;
    for (const auto& b : backends) have += (have.empty() ? "" : ", ") + b;
    MDDP_USAGE_CHECK(points.size() >= 2,
                     "lab-model: " << bench_path_ << " has " << points.size() << " all-reduce rows of backend '"
                                   << backend_
                                   << "' at >= 2 ranks (all-reduce rows of: " << (have.empty() ? "none" : have) << ")");
    const labs::LabAlphaBeta mine = labs::fit_ring_all_reduce(points);
    const perf::FitResult line = perf::fit_alpha_beta(perf::Collective::AllReduce, algo, samples);
    const perf::FitResult regimes = perf::fit_alpha_beta_regimes(perf::Collective::AllReduce, algo, samples);
    const perf::AlphaBeta& pl = line.model;

    std::printf("# microddp lab-model: %s, backend %s, %zu all-reduce points\n", bench_path_.c_str(), backend_.c_str(),
                points.size());
    std::printf("# %-30s %14s %14s %10s\n", "fit", "alpha_us", "beta_ns_per_B", "GB/s");
    auto fit_row = [](const char* name, double a, double b) {
      std::printf("  %-30s %14.4f %14.6f %10.3f\n", name, a * 1e6, b * 1e9, b > 0 ? 1e-9 / b : 0.0);
    };
    fit_row("yours (lab 08)", mine.alpha_s, mine.beta_s_per_byte);
    fit_row("src/perf, one line", pl.alpha_s, pl.beta_s_per_byte);
    std::printf("# src/perf's line: rms relative residual %.1f%%; with %zu size regime(s) (what analyze uses) %.1f%%\n",
                100 * line.rms_rel_residual, std::max<std::size_t>(1, regimes.regimes.size()),
                100 * regimes.rms_rel_residual);
    if (pl.alpha_s == 0 || pl.beta_s_per_byte == 0)
      std::printf(
          "# note: src/perf clamped a negative parameter to 0 and refitted the other; yours is unconstrained\n");

    std::printf("# %5s %14s %12s %12s %12s %12s %8s\n", "ranks", "bytes", "measured_us", "yours_us", "line_us",
                "regimes_us", "err_%");
    for (const labs::LabTiming& p : points) {
      const double y = labs::ring_all_reduce_time(mine, p.ranks, p.bytes);
      const double l = pl.time_s(perf::cost_coefficients(perf::Collective::AllReduce, algo, p.ranks, p.bytes));
      const double g = regimes.model_for(p.bytes).time_s(
          perf::cost_coefficients(perf::Collective::AllReduce, algo, p.ranks, p.bytes));
      std::printf("  %5d %14.0f %12.2f %12.2f %12.2f %12.2f %+8.1f\n", p.ranks, p.bytes, p.seconds * 1e6, y * 1e6,
                  l * 1e6, g * 1e6, 100 * (y - p.seconds) / p.seconds);
    }
    if (metrics_path_.empty()) {
      std::printf(
          "# give --metrics (a 1-rank `train --metrics` record) for the gradient's all-reduce and the break-even\n");
      return 0;
    }
    predict_training(mine, line, regimes, algo);
    return 0;
  }

 private:
  void predict_training(const labs::LabAlphaBeta& mine, const perf::FitResult& line, const perf::FitResult& regimes,
                        perf::Algorithm algo) const {
    const perf::RunRecord rec = perf::run_record_from_metrics(metrics_path_);
    MDDP_USAGE_CHECK(rec.ranks == 1 && !rec.runs.empty() && !rec.runs.front().steps.empty(),
                     "lab-model: --metrics must be a 1-rank `train --metrics` record with steps ("
                         << metrics_path_ << " has " << rec.ranks << " rank(s))");
    perf::StepProfile prof = perf::profile_of(rec, rec.runs.front());
    prof.peer_lag_s = 0;  // the lab's question has no straggler and a core per rank
    prof.time_sliced = false;
    const double rows = static_cast<double>(prof.rows_per_rank);
    const double c = (prof.data_s + prof.forward_s + prof.backward_s) / rows;
    const double grad_bytes = static_cast<double>(model::flat_count(prof.params) * model::kParamElementBytes);
    std::printf("# %s: %" PRId64
                " rows per step on 1 rank; data+forward+backward %.3f ms = %.2f us per row; "
                "gradient %.3f MiB\n",
                metrics_path_.c_str(), prof.rows_per_rank, c * rows * 1e3, c * 1e6, grad_bytes / kMiB);
    std::printf("# %5s %11s %11s %11s %9s %9s %9s %9s\n", "ranks", "yours_ms", "line_ms", "regimes_ms", "yours_b*",
                "line_b*", "flat_b*", "bucket_b*");
    constexpr std::int64_t kLimit = std::int64_t{1} << 24;
    for (int n : ranks_) {
      auto model_ar = [&](const perf::FitResult& f) -> perf::AllReduceTime {
        return [&f, n, algo](double bytes) {
          return f.model_for(bytes).time_s(perf::cost_coefficients(perf::Collective::AllReduce, algo, n, bytes));
        };
      };
      const perf::AllReduceTime with_line = model_ar(line), with_regimes = model_ar(regimes);
      const std::int64_t b = labs::break_even_rows_per_rank(mine, n, grad_bytes, c);
      std::printf("  %5d %11.3f %11.3f %11.3f %9" PRId64 " %9" PRId64 " %9" PRId64 " %9" PRId64 "\n", n,
                  labs::ring_all_reduce_time(mine, n, grad_bytes) * 1e3, with_line(grad_bytes) * 1e3,
                  with_regimes(grad_bytes) * 1e3, b,
                  src_perf_break_even(prof, ddp::Strategy::Flat, n, with_line, kLimit),
                  src_perf_break_even(prof, ddp::Strategy::Flat, n, with_regimes, kLimit),
                  src_perf_break_even(prof, ddp::Strategy::Bucketed, n, with_regimes, kLimit));
    }
    std::printf(
        "# *_ms: the gradient's all-reduce: your fit and formula, src/perf's one line, src/perf's size regimes.\n"
        "# b*: the smallest rows per rank at which n ranks finish a step of n*b* rows sooner than one rank (0: none\n"
        "# below %" PRId64
        "). yours_b*: your formula; the others search src/perf's step model (predict_step):\n"
        "# line_b* with its one-line fit and flat (the lab's question: equal to yours up to ties), flat_b* with\n"
        "# the size regimes, bucket_b* with the regimes and bucketed (backward hides part of the all-reduce).\n",
        kLimit);
  }

  std::string bench_path_, backend_ = "ring", metrics_path_;
  std::vector<int> ranks_ = {2, 4, 8, 16, 64};
};

}  // namespace

void register_lab_commands(CommandLine& cl) {
  CLI::App* sub = cl.app.add_subcommand(
      "lab-model", "Lab 08 (docs/labs/08-performance-model): your alpha-beta fit and break-even next to src/perf's");
  cl.commands.emplace_back(sub, std::make_unique<LabModelCommand>(sub));
}

}  // namespace microddp::app
