// analyze_command.cpp — `microddp analyze`: where does a step's time go, does the α-β model explain
// it, what is the bottleneck, and how would it scale.
//
// Inputs (one of):
//   --run FILE.json       a run record written earlier by `analyze --save-run`
//   --metrics FILE.jsonl  a `train --metrics` record (no per-layer times: estimated, see step_model)
//   (neither)             a fresh short run on all ranks of this job: every --strategies entry for
//                         --warmup + --steps steps with per-layer events (one Trainer, one model)
// Communication model (one of):
//   --model FILE.json     written by `analyze --fit --fit-out FILE.json`
//   --bench FILE          `microddp bench collectives` CSV/JSON output: fitted here
//   (neither)             a quick in-process all-reduce sweep on the run's backend (fresh runs with
//                         >= 2 ranks), sync and async (through the communication thread)
// --fit: only fit (from --bench or the in-process sweep), print, write --fit-out, exit.
// --device cpu|cuda|auto (default cpu), --precision: where the fresh run and the sweep compute, as
// `train --device`: on a GPU the model runs through CudaOps, the sweep all-reduces GPU memory, and the
// verdict compares with this GPU's GEMM peak at the run's precision and its copy bandwidth, measured
// here (app/device_references.hpp; --peak-gemm-size), or with --peak-gflops / --mem-gbps when given.
// Output: the report on rank 0's stdout; --json FILE for scripts; --save-run FILE keeps the record.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "app/cli_values.hpp"
#include "app/command.hpp"
#include "app/compute_device.hpp"
#include "app/device_references.hpp"
#include "app/parameter_agreement.hpp"
#include "app/train_options.hpp"
#include "app/training_session.hpp"
#include "app/zero_forecast.hpp"
#include "core/error.hpp"
#include "core/host_buffer.hpp"
#include "core/precision.hpp"
#include "core/timer.hpp"
#include "ddp/strategy.hpp"
#include "ddp/trainer.hpp"
#include "kernels/host_reduce.hpp"
#include "kernels/ops_buffer.hpp"
#include "perf/alpha_beta.hpp"
#include "perf/analysis.hpp"
#include "perf/analysis_report.hpp"
#include "perf/bench_rows.hpp"
#include "perf/comm_model_io.hpp"
#include "perf/link_classes.hpp"
#include "perf/peer_arrival.hpp"
#include "perf/run_record.hpp"
#include "perf/step_stats.hpp"

namespace microddp::app {

namespace {

class AnalyzeCommand final : public Command {
 public:
  explicit AnalyzeCommand(CLI::App* sub) {
    opts_.config.model.width = 512;
    opts_.config.model.depth = 8;
    opts_.config.global_batch = 256;
    opts_.config.steps = 8;
    add_distributed_training_options(sub, opts_);
    add_bucket_options(sub, opts_, /*with_cap=*/true);
    sub->get_option("--steps")->description("Timed steps per strategy (fresh run)");
    add_strategy_list_option(sub, "--strategies", strategies_, "Strategies of the fresh run");
    sub->add_option("--warmup", warmup_, "Untimed steps before each strategy's timed steps")
        ->check(CLI::Range(0, 1000))
        ->capture_default_str();
    sub->add_option("--run", run_path_, "Analyse a run record written by --save-run instead of running");
    sub->add_option("--metrics", metrics_path_, "Analyse a `train --metrics` JSONL record instead of running");
    sub->add_option("--save-run", save_run_path_, "Write the fresh run's record (JSON) for later --run");
    sub->add_option("--model", model_path_, "Communication model JSON (from --fit --fit-out)");
    sub->add_option("--bench", bench_path_, "Fit the model from `microddp bench collectives` CSV/JSON output");
    sub->add_flag("--fit", fit_only_,
                  "Only fit the communication model (from --bench, or an in-process sweep) and exit");
    sub->add_option("--fit-out", fit_out_, "Write the fitted communication model to this JSON file");
    sub->add_option("--fit-max-mb", fit_max_mb_,
                    "Largest all-reduce of the in-process sweep (MiB); the sweep always reaches the whole gradient too")
        ->check(finite_range(0.001, 4096.0))
        ->capture_default_str();
    sub->add_option("--link-gbps", aopt_.link_gbps,
                    "Scaling prediction: link bandwidth in Gbit/s (0 = use the fitted model)")
        ->check(finite_range(0.0, 1e6))
        ->capture_default_str();
    sub->add_option("--reduce-gbps", reduce_gbps_,
                    "Scaling prediction with --link-gbps: local reduction rate in GB/s (-1 = measure on this node, "
                    "0 = leave the reduction out)")
        ->check(finite_range(-1.0, 1e6))
        ->capture_default_str();
    sub->add_option("--latency-us", aopt_.latency_us, "Scaling prediction: per-message latency in microseconds")
        ->check(finite_range(0.0, 1e6))
        ->capture_default_str();
    sub->add_option("--burst-credit", burst_credit_,
                    "A fitted size regime with burst credit (a cliff): 'every' collective gets the measured time (a "
                    "cache or protocol cliff), or the credit refills only while the link is 'idle' (a shaped "
                    "link's token bucket: back-to-back collectives stream as one transfer)")
        ->check(CLI::IsMember({"every", "idle"}))
        ->capture_default_str();
    add_strategy_option(sub, "--scaling-strategy", aopt_.scaling_strategy,
                        "Scaling prediction: the strategy assumed at every rank count");
    sub->add_option("--scaling-bucket-mb", aopt_.scaling_bucket_mb, "Scaling prediction: bucket cap of bucketed (MiB)")
        ->check(finite_range(1e-6, 1e6))
        ->capture_default_str();
    sub->add_option("--max-ranks", aopt_.max_ranks, "Scaling prediction up to this many ranks")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    // Positive (the verdict compares achieved rates with them) and finite; the upper bounds are far
    // above any machine (a 2024 GPU: ~100 TFLOP/s FP32, HBM ~5 TB/s).
    peak_option_ = sub->add_option("--peak-gflops", aopt_.peak_gflops_per_thread,
                                   "Verdict: FP32 peak per BLAS thread (CPU); on a GPU, when given, the GPU's peak "
                                   "at the run's precision instead of the measured one")
                       ->check(finite_range(1e-3, 1e9))
                       ->capture_default_str();
    mem_option_ = sub->add_option("--mem-gbps", aopt_.mem_gbytes_s,
                                  "Verdict: reference memory bandwidth in GB/s (on a GPU, when given, instead of "
                                  "the measured device copy)")
                      ->check(finite_range(1e-3, 1e9))
                      ->capture_default_str();
    add_compute_options(sub, compute_, "the fresh run");
    // 8192: a GEMM of ~1.1 TFLOP, milliseconds on a current GPU, so launch and synchronisation costs
    // stay far below 1% of the time (jobs/gpu_bench.sh measures its peak on the same shape).
    sub->add_option("--peak-gemm-size", peak_gemm_n_,
                    "GPU verdict: side n of the n x n x n GEMM that measures the GPU's peak at the run's precision")
        ->check(CLI::Range(std::int64_t{16}, std::int64_t{65536}))
        ->capture_default_str();
    comm_option_ = sub->get_option("--comm");
    sub->add_option("--json", json_path_, "Write the report as JSON to this file");
    sub->add_option(
           "--memory-limit", memory_limit_mib_,
           "Sharding forecast: bytes per rank available, in MiB; says which --shard mode fits at each world size")
        ->check(CLI::Range(0.0, 1e12))
        ->capture_default_str();
    // Hierarchical vs flat all-reduce from one (alpha, beta) per link class (perf/link_classes.hpp).
    sub->add_option("--bench-intra", bench_intra_path_,
                    "Link classes: `bench collectives` output of the ring on the ranks of one node (intra-node fit)");
    sub->add_option("--bench-inter", bench_inter_path_,
                    "Link classes: `bench collectives` output of the ring on one rank per node (inter-node fit)");
    sub->add_option("--nodes", nodes_, "Link classes: nodes to predict for")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    sub->add_option("--ranks-per-node", ranks_per_node_, "Link classes: ranks per node to predict for")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
  }

  void validate() override {
    validate_device_name(compute_.device);
    opts_.config.precision = compute_.resolved_precision();
    validate_train_options(opts_);
    MDDP_USAGE_CHECK(run_path_.empty() || metrics_path_.empty(), "give at most one of --run and --metrics");
    MDDP_USAGE_CHECK(model_path_.empty() || bench_path_.empty(), "give at most one of --model and --bench");
    MDDP_USAGE_CHECK(!strategies_.empty(), "--strategies is empty");
    MDDP_USAGE_CHECK(bench_intra_path_.empty() == bench_inter_path_.empty(),
                     "give both --bench-intra and --bench-inter (one fit per link class), or neither");
  }

  double comm_timeout_s() const override { return opts_.comm_timeout_s; }
  int run(const comm::MpiRuntime& mpi) override;

 private:
  perf::CommModel sweep_fit(TrainingSession& session, const comm::MpiRuntime& mpi);
  void set_device_references(TrainingSession& session, const perf::RunRecord& rec);
  perf::RunRecord fresh_run(TrainingSession& session, const comm::MpiRuntime& mpi);

  TrainOptions opts_;
  std::vector<ddp::Strategy> strategies_{ddp::kStrategies.begin(), ddp::kStrategies.end()};
  int warmup_ = 2;
  std::string run_path_, metrics_path_, save_run_path_, model_path_, bench_path_, fit_out_, json_path_;
  double memory_limit_mib_ = 0;  // --memory-limit (0: none)
  std::string bench_intra_path_, bench_inter_path_;
  int nodes_ = 2, ranks_per_node_ = 2;
  bool fit_only_ = false;
  double fit_max_mb_ = 16.0;
  double reduce_gbps_ = -1.0;
  std::string burst_credit_ = "every";
  perf::AnalyzeOptions aopt_;
  ComputeOptions compute_;  // --device (cpu unless asked), --precision, --tf32
  std::int64_t peak_gemm_n_ = 8192;
  CLI::Option* comm_option_ = nullptr;  // a GPU model without --comm gets nccl (compute_device.hpp)
  CLI::Option* peak_option_ = nullptr;  // given: the GPU's peak is the user's, not measured
  CLI::Option* mem_option_ = nullptr;
  int wrong_ranks_ = -1;  // after a fresh run: ranks whose parameters differ from rank 0's (-1: no run)
};

// All-reduce sweep on this job's ranks: sizes 4 B .. max(--fit-max-mb, the whole gradient) by
// factors of 2, ending exactly at the maximum; the median of 7 repetitions (after 2 warm-ups) of the
// slowest rank, sync and async. Preallocated buffer, in the memory the run's model lives in (GPU
// memory on --device cuda: what the gradient collectives all-reduce). Why it reaches the whole gradient: `flat`
// all-reduces exactly that, and above ~32 MiB this machine's all-reduce gets slower per byte
// (docs/performance.md): a fit that stops short extrapolates a regime it never saw.
perf::CommModel AnalyzeCommand::sweep_fit(TrainingSession& session, const comm::MpiRuntime& mpi) {
  comm::Communicator& comm = session.comm();
  const std::int64_t gradient_count = model::flat_count(model::param_layout(opts_.config.model));
  const auto fit_max_count = static_cast<std::int64_t>(fit_max_mb_ * (1 << 20) / model::kParamElementBytes);
  const auto max_count = std::max<std::int64_t>({1, fit_max_count, gradient_count});
  std::vector<std::int64_t> counts;
  for (std::int64_t count = 1; count < max_count; count *= 2) counts.push_back(count);
  counts.push_back(max_count);
  kernels::OpsBuffer<float> buf(session.ops(), max_count);
  {
    std::vector<float> ones(static_cast<std::size_t>(max_count), 1.0f);
    buf.from_host(ones.data(), 0, max_count);
  }
  // Host memory: every backend takes it (the GPU backends stage it); outside the timed interval.
  core::HostBuffer<double> t(1);
  std::vector<perf::Sample> sync_samples, async_samples;
  constexpr int kReps = 7, kWarm = 2;  // 7: odd, a true median; 2 warm-ups: first-touch + lazy set-up
  for (const std::int64_t count : counts) {
    for (int async = 0; async < 2; ++async) {
      std::vector<double> times;
      for (int rep = 0; rep < kWarm + kReps; ++rep) {
        comm.barrier();
        const std::int64_t t0 = core::now_ns();
        comm::Work w = comm.all_reduce(core::TensorView::of(buf.data(), count, buf.device()), comm::ReduceOp::Sum,
                                       async ? comm::Mode::Async : comm::Mode::Sync);
        w.wait();
        t[0] = static_cast<double>(core::now_ns() - t0) * 1e-9;
        comm.all_reduce(core::TensorView::of(t.data(), 1), comm::ReduceOp::Max);
        if (rep >= kWarm) times.push_back(t[0]);
      }
      std::sort(times.begin(), times.end());
      (async ? async_samples : sync_samples)
          .push_back({mpi.size(), static_cast<double>(count * model::kParamElementBytes), times[times.size() / 2]});
    }
  }
  perf::CommModel m;
  m.source = "in-process all-reduce sweep, " + std::to_string(mpi.size()) + " ranks" +
             (session.ops().device() == core::Device::Cuda ? ", GPU memory" : "");
  for (int async = 0; async < 2; ++async) {
    perf::ModelEntry e;
    e.backend = opts_.comm + (async ? "/async" : "");
    e.algorithm = perf::algorithm_for_backend(opts_.comm);
    e.fit =
        perf::fit_alpha_beta_regimes(perf::Collective::AllReduce, e.algorithm, async ? async_samples : sync_samples);
    e.ranks = {mpi.size()};
    m.entries.push_back(e);
  }
  return m;
}

// The local reduction rate a link's numbers leave out (γ of the α-β-γ model): dst += src over
// 16 MiB of floats on one thread (the collectives reduce on one thread: the communication thread
// or MPI's), median of 7 after 2 warm-ups, in GB/s of payload. 16 MiB: larger than the caches, as a
// bucket's worth of gradients is, so the rate is the streaming one.
double measure_reduce_gbytes_s() {
  constexpr std::int64_t kCount = 4 << 20;
  core::HostBuffer<float> dst(kCount), src(kCount);
  std::fill(dst.data(), dst.data() + kCount, 1.0f);
  std::fill(src.data(), src.data() + kCount, 1e-7f);
  std::vector<double> times;
  for (int rep = 0; rep < 9; ++rep) {
    const std::int64_t t0 = core::now_ns();
    kernels::host_reduce_into(core::TensorView::of(dst.data(), kCount), core::TensorView::of(src.data(), kCount),
                              core::ReduceOp::Sum);
    if (rep >= 2) times.push_back(static_cast<double>(core::now_ns() - t0) * 1e-9);
  }
  std::sort(times.begin(), times.end());
  return static_cast<double>(kCount * static_cast<std::int64_t>(sizeof(float))) / times[times.size() / 2] * 1e-9;
}

perf::RunRecord AnalyzeCommand::fresh_run(TrainingSession& session, const comm::MpiRuntime& mpi) {
  ddp::TrainConfig cfg = opts_.config;
  const bool on_gpu = session.ops().device() == core::Device::Cuda;
  // Per-layer events are host clocks between layers: on a GPU they would time kernel launches, not
  // the layers, so a GPU run leaves them out and the analysis spreads backward by FLOPs (as for a
  // `train --metrics` record). Eager steps: a graphed step does not time its collectives, and the
  // breakdown needs them.
  cfg.layer_events = !on_gpu;
  cfg.cuda_graph = ddp::CudaGraphMode::Off;
  cfg.keep_events = false;
  cfg.strategy = strategies_.front();
  cfg.steps = static_cast<std::int64_t>(strategies_.size()) * (opts_.config.steps + warmup_);
  ddp::Trainer* current = &session.start_trainer(cfg);
  current->setup();
  perf::RunRecord rec;
  rec.model = cfg.model;
  rec.global_batch = cfg.global_batch;
  rec.ranks = mpi.size();
  rec.threads = session.threads();
  rec.ranks_per_node = mpi.local_size();
  rec.cores_per_node = static_cast<int>(std::thread::hardware_concurrency());
  rec.backend = session.backend();
  rec.optimizer = cfg.optimizer.name;
  rec.device = on_gpu ? "cuda" : "cpu";
  rec.compute = session.ops().description();
  rec.precision = std::string(core::precision_name(cfg.precision));
  rec.source = "fresh run (microddp analyze)";
  if (cfg.simulate_compute_ms > 0.0f) {  // the report names the run's source: say what its backward includes
    char simulated[96];
    std::snprintf(simulated, sizeof simulated, ", backward with %g ms of simulated compute",
                  static_cast<double>(cfg.simulate_compute_ms));
    rec.source += simulated;
  }
  for (std::size_t k = 0; k < strategies_.size(); ++k) {
    const ddp::Strategy s = strategies_[k];
    if (k > 0) {  // the run continues under the next strategy in a new trainer (app/strategy_switch.hpp)
      ddp::TrainConfig next = cfg;
      next.strategy = s;
      current = &session.switch_trainer(next);
    }
    ddp::Trainer& trainer = *current;
    perf::StrategyRun run;
    run.strategy = s;
    run.bucket_mb = ddp::strategy_row(s).reads_bucket_caps ? cfg.sync_options.bucket_mb : 0.0;
    perf::LayerTimesMean layers;
    perf::PeerArrival arrival;
    for (std::int64_t i = 0; i < warmup_ + opts_.config.steps; ++i) {
      const ddp::StepRecord r = trainer.step();
      arrival.add(trainer.events().events(), r.step, /*keep=*/i >= warmup_);
      if (i < warmup_) continue;
      run.steps.push_back(perf::step_stats(trainer.events().events(), r.step));
      layers.add(perf::layer_backward_times(trainer.events().events(), r.step));
    }
    const perf::LayerTimes mean = layers.mean();
    run.layer_backward_ms = mean.backward_ms;
    run.layer_ids = mean.layer_ids;
    run.peer_lag_ms = arrival.mean_lag_ms(session.comm());  // collective, after the timed steps
    rec.runs.push_back(run);
  }
  wrong_ranks_ = ranks_disagreeing_with_rank0(*current, session.comm());
  return rec;
}

// A GPU run's verdict references: given (--peak-gflops / --mem-gbps, then the GPU's own) or measured
// on this rank's GPU at the run's precision. A GPU record analysed where no GPU computes has only
// what was given; the report then says the peak is unknown rather than quoting a CPU's.
void AnalyzeCommand::set_device_references(TrainingSession& session, const perf::RunRecord& rec) {
  if (!rec.on_gpu()) return;
  const bool peak_given = peak_option_->count() > 0, mem_given = mem_option_->count() > 0;
  DeviceReferences measured;
  if ((!peak_given || !mem_given) && session.ops().device() == core::Device::Cuda) {
    // The copy moves max(the optimizer's 28 bytes per parameter, 16 n^2 bytes): at n = 8192, 1 GiB
    // of traffic, the streaming rate; never less than the optimizer's own traffic.
    const auto params = model::flat_count(model::param_layout(rec.model));
    const std::int64_t copy_bytes = std::max<std::int64_t>(28 * params, 16 * peak_gemm_n_ * peak_gemm_n_);
    measured = measure_device_references(session.ops(), core::parse_precision(rec.precision), peak_gemm_n_, copy_bytes);
  }
  // Each reference: the value given on the command line, else the one measured here, else unknown.
  const auto pick = [](bool given, double given_value, const char* option, double measured_value,
                       const std::string& measured_source, auto& value, std::string& source) {
    if (given) {
      value = given_value;
      source = std::string(option) + ", given for this GPU";
    } else if (measured_value > 0) {
      value = measured_value;
      source = measured_source;
    } else {
      source = std::string("unknown: a GPU run analysed without a GPU; give ") + option + " (this GPU's)";
    }
  };
  pick(peak_given, aopt_.peak_gflops_per_thread, "--peak-gflops", measured.gemm_gflops, measured.gemm_source,
       aopt_.device_peak_gflops, aopt_.device_peak_source);
  pick(mem_given, aopt_.mem_gbytes_s, "--mem-gbps", measured.mem_gbytes_s, measured.mem_source,
       aopt_.device_mem_gbytes_s, aopt_.device_mem_source);
}

int AnalyzeCommand::run(const comm::MpiRuntime& mpi) {
  const bool root = mpi.rank() == 0;
  if (!bench_intra_path_.empty()) {
    // Hier vs flat ring from the two link classes; --bench (optional) adds measured ring/hier rows.
    if (!root) return 0;
    const perf::LinkClassModel lc = perf::fit_link_classes(perf::read_bench_rows(bench_intra_path_), bench_intra_path_,
                                                           perf::read_bench_rows(bench_inter_path_), bench_inter_path_);
    const std::vector<perf::BenchRow> measured =
        bench_path_.empty() ? std::vector<perf::BenchRow>{} : perf::read_bench_rows(bench_path_);
    const nlohmann::json j = perf::compare_hier_ring(lc, nodes_, ranks_per_node_, 256.0 * (1 << 20), measured);
    std::fputs(perf::format_hier_comparison(j).c_str(), stdout);
    std::fflush(stdout);
    if (!json_path_.empty()) {
      std::ofstream out(json_path_);
      MDDP_USAGE_CHECK(out.good(), "cannot write '" << json_path_ << "'");
      out << j.dump(2) << "\n";
    }
    return 0;
  }
  // The device as train picks it (compute_device.hpp): a GPU model without --comm gets nccl.
  TrainingSession session(mpi, opts_, comm_settings(),
                          DeviceRequest{compute_.device, comm_option_->count() > 0,
                                        opts_.config.precision == core::Precision::Tf32});
  opts_.comm = session.backend();
  const bool recorded = !run_path_.empty() || !metrics_path_.empty();

  // 1. The communication model.
  perf::CommModel model;
  if (!model_path_.empty()) {
    model = perf::load_comm_model(model_path_);
  } else if (!bench_path_.empty()) {
    model = perf::fit_bench_rows(perf::read_bench_rows(bench_path_), bench_path_);
  } else if (mpi.size() > 1 && (!recorded || fit_only_)) {
    model = sweep_fit(session, mpi);
  } else {
    model.source = "none (one rank: communication is free)";
  }
  if (!fit_out_.empty() && root) perf::save_comm_model(model, fit_out_);
  if (fit_only_) {
    if (root) {
      std::printf("# microddp analyze --fit: %s\n", model.source.c_str());
      std::printf("# %-14s %-14s %-6s %10s %12s %10s %8s %10s %12s\n", "backend", "collective", "algo", "alpha_us",
                  "beta_ns/B", "GB/s", "R2", "rms_rel", "max_rel");
      for (const auto& e : model.entries) {
        const auto& f = e.fit;
        std::printf("  %-14s %-14s %-6s %10.3f %12.5f %10.3f %8.4f %9.1f%% %11.1f%%\n", e.backend.c_str(),
                    std::string(perf::collective_name(e.collective)).c_str(),
                    std::string(perf::algorithm_name(e.algorithm)).c_str(), f.model.alpha_s * 1e6,
                    f.model.beta_s_per_byte * 1e9, f.model.beta_s_per_byte > 0 ? 1e-9 / f.model.beta_s_per_byte : 0.0,
                    f.r2, 100 * f.rms_rel_residual, 100 * f.max_rel_residual);
        // With size regimes the columns above are the one line's α, β and the regimes' quality.
        if (!f.regimes.empty()) {
          std::printf("    %zu size regimes (one line alone: rms_rel %.1f%%):\n", f.regimes.size(),
                      100 * f.line_rms_rel_residual);
        }
        for (const auto& g : f.regimes) {
          std::printf("      from %12.0f B: alpha %10.3f us  beta %12.5f ns/B", g.from_bytes, g.model.alpha_s * 1e6,
                      g.model.beta_s_per_byte * 1e9);
          if (g.has_burst_credit()) std::printf("  burst credit %.3f us", g.model.credit_s * 1e6);
          std::printf("\n");
        }
        if (f.has_burst_credit())
          std::printf("    %s; --burst-credit every|idle says how predictions use it\n",
                      std::string(perf::kBurstCreditNote).c_str());
        if (const std::string w = perf::fit_warning(f); !w.empty()) std::printf("    (!) %s\n", w.c_str());
      }
      if (!fit_out_.empty()) std::printf("# model written to %s\n", fit_out_.c_str());
    }
    return 0;
  }

  // 2. The run.
  perf::RunRecord rec;
  if (!run_path_.empty()) {
    rec = perf::load_run_record(run_path_);
  } else if (!metrics_path_.empty()) {
    rec = perf::run_record_from_metrics(metrics_path_);
  } else {
    rec = fresh_run(session, mpi);
  }
  if (!root) return wrong_ranks_ > 0 ? 1 : 0;
  // Rank 0 alone, after the others are done: ranks sharing one GPU would halve each other's rate.
  set_device_references(session, rec);
  if (!save_run_path_.empty()) {
    std::ofstream out(save_run_path_);
    MDDP_USAGE_CHECK(out.good(), "cannot write '" << save_run_path_ << "'");
    out << perf::to_json(rec).dump(1) << "\n";
  }
  // The record's backend must be in the model (a model fitted for another backend cannot predict).
  if (rec.ranks > 1 && model.find(rec.backend) == nullptr && !model.entries.empty()) {
    MDDP_USAGE_CHECK(false, "the communication model (" << model.source << ") has no all_reduce entry for backend '"
                                                        << rec.backend << "'");
  }
  MDDP_USAGE_CHECK(rec.ranks <= 1 || !model.entries.empty() || aopt_.link_gbps > 0,
                   "a " << rec.ranks << "-rank run needs a communication model: give --model or --bench");
  aopt_.burst_credit_refills_when_idle = burst_credit_ == "idle";
  if (aopt_.link_gbps > 0) aopt_.reduce_gbytes_s = reduce_gbps_ >= 0 ? reduce_gbps_ : measure_reduce_gbytes_s();
  perf::CommModel used = model;
  if (rec.ranks > 1 && used.entries.empty()) {  // only --link-gbps: use it for this run too
    perf::ModelEntry e;
    e.backend = rec.backend;
    e.fit.model = perf::AlphaBeta::from_link(aopt_.link_gbps, aopt_.latency_us,
                                             aopt_.reduce_gbytes_s > 0 ? 1e-9 / aopt_.reduce_gbytes_s : 0.0);
    used.entries.push_back(e);
    used.source = "--link-gbps/--latency-us";
  }
  const perf::Analysis analysis = perf::analyze(rec, used, aopt_);
  std::fputs(perf::format_report(analysis).c_str(), stdout);
  std::fputs(zero_forecast(opts_.config, aopt_.scaling_bucket_mb, analysis, memory_limit_mib_, aopt_.max_ranks).c_str(),
             stdout);
  if (wrong_ranks_ == 0) {
    std::printf("# OK: all %d ranks hold identical parameters after the fresh run\n", mpi.size());
  } else if (wrong_ranks_ > 0) {
    std::printf("# FAILED: %d of %d ranks hold parameters other than rank 0's after the fresh run\n", wrong_ranks_,
                mpi.size());
  }
  std::fflush(stdout);
  if (!json_path_.empty()) {
    std::ofstream out(json_path_);
    MDDP_USAGE_CHECK(out.good(), "cannot write '" << json_path_ << "'");
    out << perf::to_json(analysis).dump(2) << "\n";
  }
  return wrong_ranks_ > 0 ? 1 : 0;
}

}  // namespace

std::unique_ptr<Command> register_analyze(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand(
      "analyze", "Step breakdown, comm model fit, predicted vs measured per strategy, bottleneck, scaling");
  return std::make_unique<AnalyzeCommand>(sub);
}

}  // namespace microddp::app
