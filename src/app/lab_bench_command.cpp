// lab_bench_command.cpp — `microddp lab-bench`, lab 12's seam (docs/labs/12-benchmark): the
// student's measure_all_reduce (labs/lab_api.hpp) over a size sweep on a real backend, printed as
// `bench collectives` prints, and fitted with src/perf's α-β fit (and lab 08's, when it is done).
//
//   mpirun -np N microddp lab-bench [--backend ring] [-b 4 -e 64MiB -f 4] [-w 5 -n 20 -m 1]
//                                   [--compare bench.json] [--json out.json]
//
// The measurement is the student's; around it the program fills the inputs and checks the last
// result exactly (labs/lab_bench.hpp), recomputes algbw and busbw from the student's time to show a
// disagreement ('!'), and with --compare puts the out-of-place all-reduce of the same backend, size
// and rank count from `bench collectives` output beside each row. --json writes the rows in `bench
// collectives`' format, so `lab-model --bench` and `analyze --bench` read them.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli_values.hpp"
#include "app/command.hpp"
#include "app/lab_commands.hpp"
#include "comm/factory.hpp"
#include "core/error.hpp"
#include "labs/lab_api.hpp"
#include "labs/lab_bench.hpp"
#include "perf/alpha_beta.hpp"
#include "perf/bench_rows.hpp"

namespace microddp::app {

namespace {

// Two readings of the same quantity computed in another order: a few ulps apart. Beyond this the
// student's bandwidth is not the one its time gives.
constexpr double kSameTol = 1e-9;
bool same(double a, double b) { return std::abs(a - b) <= kSameTol * std::max(std::abs(a), std::abs(b)); }

class LabBenchCommand final : public Command {
 public:
  explicit LabBenchCommand(CLI::App* sub) {
    sub->add_option("--backend", backend_, "The backend whose all-reduce is measured (a host backend)")
        ->capture_default_str();
    add_byte_size_option(sub, "-b,--min-bytes", min_bytes_, "Smallest size", 4, std::int64_t{1} << 36);
    add_byte_size_option(sub, "-e,--max-bytes", max_bytes_, "Largest size", 4, std::int64_t{1} << 36);
    sub->add_option("-f,--factor", factor_, "Size multiplier between rows")
        ->check(CLI::Range(2, 1024))
        ->capture_default_str();
    sub->add_option("-w,--warmup", settings_.warmup, "Untimed all-reduces per size")
        ->check(CLI::Range(0, 100000))
        ->capture_default_str();
    sub->add_option("-n,--reps", settings_.reps, "Timed batches per size (the median is taken over them)")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    sub->add_option("-m,--batch", settings_.batch, "All-reduces per timed batch, back to back")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    sub->add_option("--compare", compare_, "`bench collectives` output (JSON or CSV): its time beside each row");
    sub->add_option("--json", json_, "Also write the rows to this JSON file, in `bench collectives`' format");
  }
  void validate() override {
    MDDP_USAGE_CHECK(min_bytes_ <= max_bytes_, "--min-bytes " << min_bytes_ << " > --max-bytes " << max_bytes_);
    comm::check_backend_available(backend_);
    const auto d = comm::find_backend(backend_);
    MDDP_USAGE_CHECK(d && d->kind == comm::BackendKind::Host,
                     "lab-bench measures host backends on host memory; '" << backend_ << "' is a GPU stream backend");
    if (!compare_.empty()) compare_rows_ = perf::read_bench_rows(compare_);  // a bad file: exit 2 before MPI
  }
  int run(const comm::MpiRuntime& mpi) override;

 private:
  // The out-of-place all-reduce time (s) of this backend, size and rank count in --compare, or 0.
  double bench_time_s(int ranks, std::int64_t bytes) const {
    for (const perf::BenchRow& r : compare_rows_) {  // bench collectives writes out-of-place first
      perf::Collective c;
      if (r.backend == backend_ && perf::parse_collective(r.collective, c) && c == perf::Collective::AllReduce &&
          r.ranks == ranks && r.bytes == static_cast<double>(bytes))
        return r.seconds;
    }
    return 0;
  }
  void print_fits(const std::vector<labs::LabBenchRow>& rows, int n) const;
  void write_json(const std::vector<labs::LabBenchRow>& rows, int n) const;

  std::string backend_ = "ring", compare_, json_;
  std::int64_t min_bytes_ = 4, max_bytes_ = std::int64_t{16} << 20;
  int factor_ = 4;
  labs::LabBenchSettings settings_;
  std::vector<perf::BenchRow> compare_rows_;
};

int LabBenchCommand::run(const comm::MpiRuntime& mpi) {
  const auto c = make_communicator(backend_, mpi);
  const int n = mpi.size();
  std::vector<std::int64_t> sizes;
  for (std::int64_t b = min_bytes_; b <= max_bytes_; b *= factor_) sizes.push_back(b);
  const std::int64_t expected_calls = settings_.warmup + static_cast<std::int64_t>(settings_.reps) * settings_.batch;
  if (mpi.rank() == 0) {
    std::printf("# microddp lab-bench: lab 12's measure_all_reduce on backend %s, %d rank(s) on %s, %s\n",
                backend_.c_str(), n, mpi.hostname().c_str(), mpi.library_version().c_str());
    std::printf("# sizes %" PRId64 " .. %" PRId64 " bytes x%d, warmup %d, reps %d, batch %d; float sum, out of place\n",
                min_bytes_, max_bytes_, factor_, settings_.warmup, settings_.reps, settings_.batch);
    std::printf(
        "# time, algbw, busbw: what your function returned (us, GB/s); '!': not what the program computes\n"
        "# from your time (algbw = size/time, busbw = algbw x 2(n-1)/n). #wrong: the last result, checked\n"
        "# exactly, over all ranks. calls: your all-reduces (warmup + reps x batch = %" PRId64 ")\n",
        expected_calls);
    std::printf("# %12s %12s %10s %9s %9s %7s %6s", "size(B)", "count", "time(us)", "algbw", "busbw", "#wrong",
                "calls");
    if (!compare_.empty()) std::printf(" %10s %9s %8s", "bench(us)", "b_busbw", "yours/b");
    std::printf("\n");
    std::fflush(stdout);
  }
  const std::vector<labs::LabBenchRow> rows = labs::run_lab_bench(*c, mpi, sizes, settings_);
  bool all_agree = true, all_calls = true;
  std::int64_t wrong_total = 0;
  if (mpi.rank() == 0) {
    for (const labs::LabBenchRow& r : rows) {
      const labs::LabBenchResult& y = r.result;
      const double algbw = y.time_s > 0 ? static_cast<double>(r.bytes) / y.time_s * 1e-9 : 0;
      const double busbw = algbw * 2.0 * (n - 1) / n;
      std::printf("  %12" PRId64 " %12" PRId64 " %10.1f %8.3f%c %8.3f%c %7" PRId64 " %6" PRId64, r.bytes, r.count,
                  y.time_s * 1e6, y.algbw_gbs, same(y.algbw_gbs, algbw) ? ' ' : '!', y.busbw_gbs,
                  same(y.busbw_gbs, busbw) ? ' ' : '!', r.wrong, r.calls);
      if (!compare_.empty()) {
        const double b = bench_time_s(n, r.bytes);
        if (b > 0) {
          std::printf(" %10.1f %9.3f %8.2f", b * 1e6, static_cast<double>(r.bytes) / b * 1e-9 * 2.0 * (n - 1) / n,
                      y.time_s / b);
        } else {
          std::printf(" %10s %9s %8s", "-", "-", "-");
        }
      }
      std::printf("\n");
      all_agree = all_agree && r.ranks_agree;
      all_calls = all_calls && r.calls == expected_calls;
      wrong_total += r.wrong;
    }
    if (!all_agree)
      std::printf("# note: the ranks returned different times: take the max over ranks (max_over_ranks)\n");
    if (!all_calls) std::printf("# note: calls differ from warmup + reps x batch = %" PRId64 "\n", expected_calls);
    if (!compare_.empty())
      std::printf("# bench: `bench collectives` (%s): max over ranks of each rank's median; '-': no such row\n",
                  compare_.c_str());
    print_fits(rows, n);
    std::printf("# Out of bounds values : %" PRId64 " %s\n", wrong_total, wrong_total == 0 ? "OK" : "FAILED");
    if (!json_.empty()) write_json(rows, n);
  }
  return wrong_total == 0 ? 0 : 1;  // rank 0 holds the sum; a rank that exits 1 fails the job
}

void LabBenchCommand::print_fits(const std::vector<labs::LabBenchRow>& rows, int n) const {
  if (n < 2) {
    std::printf("# fit: one rank sends nothing (busbw 0); run on >= 2 ranks to fit alpha and beta\n");
    return;
  }
  std::vector<perf::Sample> samples;
  std::vector<labs::LabTiming> points;
  for (const labs::LabBenchRow& r : rows) {
    if (!(r.result.time_s > 0)) continue;
    samples.push_back({n, static_cast<double>(r.bytes), r.result.time_s});
    points.push_back({n, static_cast<double>(r.bytes), r.result.time_s});
  }
  if (samples.size() < 2) {
    std::printf("# fit: needs >= 2 sizes with a time > 0\n");
    return;
  }
  const perf::Algorithm algo = perf::algorithm_for_backend(backend_);
  const perf::FitResult line = perf::fit_alpha_beta(perf::Collective::AllReduce, algo, samples);
  const perf::FitResult regimes = perf::fit_alpha_beta_regimes(perf::Collective::AllReduce, algo, samples);
  std::printf("# alpha-beta fit of your times, modelled as %s (src/perf):\n",
              std::string(perf::algorithm_name(algo)).c_str());
  std::printf("#   %-28s %12s %14s %10s %8s\n", "fit", "alpha_us", "beta_ns_per_B", "GB/s", "rms_%");
  auto fit_row = [](const char* name, double a, double b, double rms) {
    std::printf("    %-28s %12.4f %14.6f %10.3f %8.1f\n", name, a * 1e6, b * 1e9, b > 0 ? 1e-9 / b : 0.0, 100 * rms);
  };
  fit_row("src/perf, one line", line.model.alpha_s, line.model.beta_s_per_byte, line.rms_rel_residual);
  if (algo == perf::Algorithm::Ring) {
    try {
      const labs::LabAlphaBeta mine = labs::fit_ring_all_reduce(points);
      double sq = 0;
      for (const labs::LabTiming& p : points) {
        const double e = (labs::ring_all_reduce_time(mine, p.ranks, p.bytes) - p.seconds) / p.seconds;
        sq += e * e;
      }
      fit_row("yours (lab 08)", mine.alpha_s, mine.beta_s_per_byte, std::sqrt(sq / static_cast<double>(points.size())));
    } catch (const std::exception& e) {  // lab 08 not done yet, or its fit refused the points
      std::printf("    %-28s %s\n", "yours (lab 08)", e.what());
    }
  }
  std::printf("#   src/perf's size regimes (what analyze uses): %zu, rms %.1f%%", regimes.regimes.size(),
              100 * regimes.rms_rel_residual);
  for (const perf::SizeRegime& g : regimes.regimes) {
    std::printf("; from %.0f B alpha %.2f us, %.3f GB/s", g.from_bytes, g.model.alpha_s * 1e6,
                g.model.beta_s_per_byte > 0 ? 1e-9 / g.model.beta_s_per_byte : 0.0);
  }
  std::printf("\n");
}

void LabBenchCommand::write_json(const std::vector<labs::LabBenchRow>& rows, int n) const {
  std::ofstream f(json_);
  MDDP_CHECK(f.good(), "cannot write " << json_);
  f << "{\"ranks\": " << n << ", \"iters\": " << settings_.reps << ", \"warmup\": " << settings_.warmup
    << ", \"batch\": " << settings_.batch << ", \"dtype\": \"float\", \"checked\": true"
    << ", \"time\": \"lab 12: median over repetitions of the slowest rank's time\", \"rows\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const labs::LabBenchRow& r = rows[i];
    f << "  {\"op\": \"allreduce\", \"backend\": \"" << backend_ << "\", \"bytes\": " << r.bytes
      << ", \"count\": " << r.count
      << ", \"dtype\": \"float\", \"in_place\": false, \"time_us\": " << r.result.time_s * 1e6
      << ", \"algbw_gbs\": " << r.result.algbw_gbs << ", \"busbw_gbs\": " << r.result.busbw_gbs
      << ", \"wrong\": " << r.wrong << "}" << (i + 1 < rows.size() ? ",\n" : "\n");
  }
  f << "]}\n";
}

}  // namespace

void register_lab_bench_command(CommandLine& cl) {
  CLI::App* sub = cl.app.add_subcommand("lab-bench",
                                        "Lab 12 (docs/labs/12-benchmark): your all-reduce benchmark over a size sweep, "
                                        "fitted with src/perf's alpha-beta");
  cl.commands.emplace_back(sub, std::make_unique<LabBenchCommand>(sub));
}

}  // namespace microddp::app
