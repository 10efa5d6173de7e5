// bench_ddp_command.cpp — `microddp bench ddp`: every strategy on the same model and data, side by
// side in ONE invocation, and the course's comparison table.
//
// Variants: the --strategies list; `bucketed` expands into one variant per --bucket-mb value (the
// bucket-size sweep). One training run (one model, one optimizer state) switches strategy between
// blocks of steps: each block continues it in a new Trainer built for the variant
// (TrainingSession::switch_trainer, app/strategy_switch.hpp); rounds are interleaved (round 1: every
// variant, round 2: every variant, ...) so drift on a shared machine hits all variants alike (house
// style). Each block starts with untimed warm-up steps (fresh strategy: first-touch of its state,
// Work handles, ...).
//
// Columns (means over all timed steps, from rank 0's event log — the one source of timing truth):
//   step_ms      optimizer step wall time
//   busy_ms      gradient communication actually executing: the union of the collectives'
//                [start of execution, completion] intervals (perf/comm_busy.hpp); <= step_ms
//   queued_ms    sum over collectives of start of execution - launch (waiting behind earlier ones;
//                summed, so it can exceed the step)
//   exposed_ms   time blocked in GradSync::finish() waiting for communication
//   ops/step     gradient collectives per step
//   comm_ovh%    exposed_ms / step_ms
//   overlap%     1 - exposed_ms / busy_ms (communication hidden behind backward)
// (The former comm_ms column, Σ launch -> completion, counted queueing as communication; JSON keeps
// it as launch_to_done_ms.)
//   speedup      naive step_ms / this step_ms
//   #wrong       ranks whose parameters differ from rank 0's after the variant's steps (must be 0)
//   step_p50, exposed_p50  medians of the same per-step values: on a shared machine one slow step
//                moves a mean, not a median
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "app/cli_values.hpp"
#include "app/command.hpp"
#include "app/compute_device.hpp"
#include "run/trace_output.hpp"
#include "app/train_options.hpp"
#include "app/training_session.hpp"
#include "core/error.hpp"
#include "core/precision.hpp"
#include "ddp/strategy.hpp"
#include "ddp/trainer.hpp"
#include "ddp/zero/shard_plan.hpp"
#include "ddp/zero/zero_sync.hpp"
#include "perf/median.hpp"
#include "perf/step_stats.hpp"

namespace microddp::app {

namespace {

struct Variant {
  ddp::Strategy strategy = ddp::Strategy::Naive;
  double bucket_mb = 0;  // bucketed only
  ddp::zero::ShardMode shard = ddp::zero::ShardMode::None;
  ddp::CompressionMode compression = ddp::CompressionMode::None;
  std::string label;
  double ring_mib = 0;       // per-rank bytes a ring moves per step (formula over the collectives' sizes)
  double opt_state_mib = 0;  // optimizer state per rank, measured (memory_report)
  std::vector<perf::StepStats> stats;
  std::vector<core::Event> trace_events;
  int wrong = 0;
};

class BenchDdpCommand final : public Command {
 public:
  explicit BenchDdpCommand(CLI::App* sub) {
    opts_.config.model.width = 1024;
    opts_.config.model.depth = 16;
    opts_.config.global_batch = 256;
    opts_.config.steps = 5;
    add_distributed_training_options(sub, opts_);
    add_bucket_options(sub, opts_, /*with_cap=*/false);  // the caps are a list here: --bucket-mb below
    add_trace_option(sub, opts_);
    sub->add_option("--shard", shards_,
                    "Shard modes to compare (none, optimizer, gradients; docs/zero.md), each with every strategy")
        ->delimiter(',')
        ->check(CLI::IsMember(ddp::zero::kShardModeNames.names()))
        ->capture_default_str();
    sub->get_option("--steps")->description("Timed steps per variant per round");
    add_strategy_list_option(sub, "--strategies", strategies_, "Strategies to compare");
    // Compression modes side by side (docs/compression.md): a list here, not the single mode of train.
    sub->remove_option(sub->get_option("--grad-compression"));
    add_compression_list_option(sub, "--grad-compression", compressions_, "Gradient compression modes to compare");
    sub->add_option("--bucket-mb", bucket_mbs_, "Bucket caps in MiB for `bucketed` (one variant each: the sweep)")
        ->delimiter(',')
        ->check(finite_range(1e-6, 1e6))
        ->capture_default_str();
    sub->add_option("--rounds", rounds_, "Interleaved rounds")->check(CLI::Range(1, 1000))->capture_default_str();
    sub->add_option("--warmup", warmup_, "Untimed steps at the start of each variant's block")
        ->check(CLI::Range(0, 1000))
        ->capture_default_str();
    add_compute_options(sub, compute_, "the model");
    comm_option_ = sub->get_option("--comm");
    sub->add_option("--csv", csv_path_, "Also write the table as CSV");
    sub->add_option("--json", json_path_, "Also write the table as JSON");
  }
  void validate() override {
    MDDP_USAGE_CHECK(!compressions_.empty(), "--grad-compression is empty");
    // The shared checks see the most specific mode listed (--powersgd-rank needs powersgd among them).
    for (const auto c : compressions_) {
      if (c != ddp::CompressionMode::None &&
          !ddp::compression_mode_row(opts_.config.compression.mode).powersgd_settings) {
        opts_.config.compression.mode = c;
      }
    }
    validate_device_name(compute_.device);
    opts_.config.precision = compute_.resolved_precision();
    validate_train_options(opts_);
    MDDP_USAGE_CHECK(!strategies_.empty(), "--strategies is empty");
    MDDP_USAGE_CHECK(!bucket_mbs_.empty(), "--bucket-mb is empty");
  }
  double comm_timeout_s() const override { return opts_.comm_timeout_s; }
  int run(const comm::MpiRuntime& mpi) override;

 private:
  TrainOptions opts_;
  std::vector<ddp::Strategy> strategies_{ddp::kStrategies.begin(), ddp::kStrategies.end()};
  std::vector<ddp::CompressionMode> compressions_{ddp::CompressionMode::None};
  std::vector<double> bucket_mbs_{0.25, 1, 4, 25, 100};
  std::vector<std::string> shards_{"none"};
  int rounds_ = 3, warmup_ = 1;
  ComputeOptions compute_;  // --device (cpu unless asked), --precision, --tf32
  CLI::Option* comm_option_ = nullptr;  // to know whether --comm was given (a GPU model defaults to nccl)
  std::string csv_path_, json_path_;
};

double mean_of(const std::vector<perf::StepStats>& v, double perf::StepStats::*f) {
  double s = 0;
  for (const auto& x : v) s += x.*f;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

std::vector<double> all_of(const std::vector<perf::StepStats>& v, double perf::StepStats::*f) {
  std::vector<double> out;
  out.reserve(v.size());
  for (const auto& x : v) out.push_back(x.*f);
  return out;
}

double median_of(const std::vector<perf::StepStats>& v, double perf::StepStats::*f) {
  std::vector<double> x;
  x.reserve(v.size());
  for (const auto& s : v) x.push_back(s.*f);
  return perf::median(std::move(x));
}

int BenchDdpCommand::run(const comm::MpiRuntime& mpi) {
  std::vector<Variant> variants;
  for (const auto& shard_name : shards_) {
    const ddp::zero::ShardMode shard = ddp::zero::parse_shard_mode(shard_name);
    const std::string shard_suffix =
        shard == ddp::zero::ShardMode::None ? "" : (shard == ddp::zero::ShardMode::Optimizer ? " zero1" : " zero2");
    for (const auto c : compressions_) {
      // The trainer refuses sharding with compression (ddp/trainer.cpp build_sync): such pairs are left out.
      if (shard != ddp::zero::ShardMode::None && c != ddp::CompressionMode::None) continue;
      const std::string suffix = shard_suffix + (compressions_.size() > 1 || c != ddp::CompressionMode::None
                                                     ? " " + std::string(ddp::compression_mode_name(c))
                                                     : "");
      for (const ddp::Strategy s : strategies_) {
        // Rows that do not shard (the labs) run unsharded only.
        if (shard != ddp::zero::ShardMode::None && !ddp::strategy_row(s).no_shard.empty()) continue;
        if (ddp::strategy_row(s).reads_bucket_caps) {  // bucketed and lab-bucketed: the sweep
          for (double mb : bucket_mbs_) {
            char label[64];
            std::snprintf(label, sizeof label, "%s %gMiB", std::string(ddp::strategy_name(s)).c_str(), mb);
            variants.push_back({s, mb, shard, c, std::string(label) + suffix, 0, 0, {}, {}, 0});
          }
        } else {
          variants.push_back({s, 0, shard, c, std::string(ddp::strategy_name(s)) + suffix, 0, 0, {}, {}, 0});
        }
      }
    }
  }
  MDDP_USAGE_CHECK(!variants.empty(),
                   "no variant to run: a --shard other than none cannot be combined with a "
                   "--grad-compression other than none");
  const bool tracing = !opts_.trace_path.empty();
  auto cfg = opts_.config;
  const std::int64_t steps_per_block = cfg.steps + warmup_;
  cfg.steps = steps_per_block * rounds_ * static_cast<std::int64_t>(variants.size());
  cfg.strategy = variants[0].strategy;
  cfg.sync_options.bucket_mb = variants[0].bucket_mb > 0 ? variants[0].bucket_mb : 25.0;
  cfg.shard = variants[0].shard;
  cfg.layer_events = tracing;
  // The device as train picks it (compute_device.hpp): a GPU model without --comm gets nccl.
  TrainingSession session(mpi, opts_, comm_settings(),
                          DeviceRequest{compute_.device, comm_option_->count() > 0, cfg.precision == core::Precision::Tf32});
  opts_.comm = session.backend();
  const int threads = session.threads();
  comm::Communicator& comm = session.comm();
  ddp::Trainer& first = session.start_trainer(cfg);
  first.setup();
  const bool root = mpi.rank() == 0;
  const double grad_mib = static_cast<double>(first.model().flat_count() * model::kParamElementBytes) / (1 << 20);
  if (root) {
    std::printf("# microddp bench ddp: width %" PRId64 " depth %" PRId64
                " (%.2f M parameters, %.2f MiB of gradients), global "
                "batch %" PRId64 " x %" PRId64 " accumulation, %d ranks, %s backend, %s\n",
                cfg.model.width, cfg.model.depth, static_cast<double>(first.model().parameter_count()) * 1e-6, grad_mib,
                cfg.global_batch, cfg.accum_steps, mpi.size(), opts_.comm.c_str(),
                session.ops().device() == core::Device::Host
                    ? (std::to_string(threads) + " BLAS thread(s) per rank").c_str()
                    : ("device cuda: " + session.ops().description()).c_str());
    if (cfg.precision != core::Precision::Fp32)
      std::printf("# precision: %s (--precision)\n", std::string(core::precision_name(cfg.precision)).c_str());
    if (cfg.simulate_compute_ms > 0.0f) {
      std::printf("# simulated compute: backward waits %g ms per pass, sleeping (--simulate-compute-ms: an "
                  "accelerator's backward, the core free for communication)\n",
                  static_cast<double>(cfg.simulate_compute_ms));
    }
    std::printf("# %d interleaved rounds x %" PRId64
                " timed steps per variant (after %d warm-up step(s) each time); "
                "means of rank 0's per-step statistics\n",
                rounds_, opts_.config.steps, warmup_);
    std::fflush(stdout);
  }
  for (int round = 0; round < rounds_; ++round) {
    for (auto& v : variants) {
      ddp::GradSyncOptions so = cfg.sync_options;
      if (v.bucket_mb > 0) so.bucket_mb = v.bucket_mb;
      ddp::TrainConfig next = cfg;
      next.strategy = v.strategy;
      next.sync_options = so;
      next.shard = v.shard;
      next.compression = opts_.config.compression;
      next.compression.mode = v.compression;
      ddp::Trainer& trainer = session.switch_trainer(next);
      {
        // Bytes per rank on a ring: an all-reduce of B bytes sends 2(n-1)/n B, a reduce-scatter of B
        // bytes and an all-gather into B bytes (n-1)/n B each.
        const double n = mpi.size(), f = (n - 1) / n;
        const auto* z = dynamic_cast<const ddp::zero::ZeroSync*>(&trainer.sync());
        const double b = static_cast<double>(trainer.sync().bytes_per_step());
        v.ring_mib = (z != nullptr ? f * (b + static_cast<double>(z->gather_bytes_per_step())) : 2 * f * b) / (1 << 20);
        v.opt_state_mib = static_cast<double>(trainer.memory_report().optimizer_state) / (1 << 20);
      }
      for (std::int64_t i = 0; i < steps_per_block; ++i) {
        const auto rec = trainer.step();
        if (i < warmup_) continue;
        v.stats.push_back(perf::step_stats(trainer.events().events(), rec.step));
        if (tracing && round == rounds_ - 1 && i + 1 == steps_per_block) {
          v.trace_events.assign(trainer.events().events().begin(), trainer.events().events().end());
        }
      }
      // #wrong: every rank must hold rank 0's parameters.
      auto mine = static_cast<std::int64_t>(trainer.param_checksum());
      std::vector<std::int64_t> all(static_cast<std::size_t>(mpi.size()));
      comm.all_gather(core::TensorView::of(&mine, 1), core::TensorView::of(all.data(), mpi.size()));
      for (auto c : all) v.wrong += c != all[0] ? 1 : 0;
      if (tracing && round == rounds_ - 1) {
        std::string path = opts_.trace_path;
        const auto dot = path.rfind(".json");
        std::string tag = v.label;
        std::replace(tag.begin(), tag.end(), ' ', '_');
        path = (dot == std::string::npos ? path : path.substr(0, dot)) + "." + tag + ".json";
        run::write_trace(path, comm, v.trace_events, trainer.sync(), trainer.model().params(),
                    {{"command", "bench ddp"}, {"variant", v.label}});
        if (root) std::printf("# trace of %s's last step: %s\n", v.label.c_str(), path.c_str());
      }
    }
  }
  if (!root) return 0;
  double naive_ms = 0;
  for (const auto& v : variants) {
    if (v.strategy == ddp::Strategy::Naive) naive_ms = mean_of(v.stats, &perf::StepStats::step_ms);
  }
  nlohmann::json rows = nlohmann::json::array();
  std::printf("# %-27s %9s %9s %9s %10s %8s %9s %9s %9s %9s %8s %6s %9s %9s %9s %9s %11s\n", "variant", "step_ms",
              "busy_ms", "queued_ms", "exposed_ms", "ops/step", "MiB/step", "comp_ms", "comm_ovh%", "overlap%", "speedup",
              "#wrong", "coll_MiB", "ring_MiB", "opt_MiB", "step_p50", "exposed_p50");
  bool ok = true;
  for (const auto& v : variants) {
    const double step = mean_of(v.stats, &perf::StepStats::step_ms);
    const double total = mean_of(v.stats, &perf::StepStats::comm_total_ms);
    const double busy = mean_of(v.stats, &perf::StepStats::comm_busy_ms);
    const double queued = mean_of(v.stats, &perf::StepStats::comm_queued_ms);
    const double exposed = mean_of(v.stats, &perf::StepStats::comm_exposed_ms);
    const std::int64_t ops_per_step = v.stats.empty() ? 0 : v.stats.back().collectives;
    const double ovh = step > 0 ? 100.0 * exposed / step : 0;
    const double overlap = 100.0 * perf::overlap_fraction(exposed, busy);  // of the means, like the other columns
    const double speedup = naive_ms > 0 && step > 0 ? naive_ms / step : 0;
    const double mib = v.stats.empty() ? 0.0 : static_cast<double>(v.stats.back().comm_bytes) / (1 << 20);
    const double comp_ms = mean_of(v.stats, &perf::StepStats::compress_ms);
    ok = ok && v.wrong == 0;
    char sp[16];
    if (speedup > 0) {
      std::snprintf(sp, sizeof sp, "%.2fx", speedup);
    } else {
      std::snprintf(sp, sizeof sp, "-");
    }
    // coll_MiB: the bytes of the step's collectives from the event log (the byte counters): an
    // all-reduce counts its buffer, a reduce-scatter its input and an all-gather its output.
    const double coll_mib = v.stats.empty() ? 0.0 : static_cast<double>(v.stats.back().comm_bytes) / (1 << 20);
    const double step_p50 = median_of(v.stats, &perf::StepStats::step_ms);
    const double exposed_p50 = median_of(v.stats, &perf::StepStats::comm_exposed_ms);
    std::printf("  %-27s %9.2f %9.2f %9.2f %10.2f %8" PRId64
                " %9.3f %9.3f %9.1f %9.1f %8s %6d %9.2f %9.2f %9.2f %9.2f %11.2f\n",
                v.label.c_str(), step, busy, queued, exposed, ops_per_step, mib, comp_ms, ovh, overlap, sp, v.wrong,
                coll_mib, v.ring_mib, v.opt_state_mib, step_p50, exposed_p50);
    rows.push_back({{"variant", v.label},
                    {"strategy", ddp::strategy_name(v.strategy)},
                    {"bucket_mb", v.bucket_mb},
                    {"grad_compression", std::string(ddp::compression_mode_name(v.compression))},
                    {"comm_mib_per_step", mib},
                    {"compress_ms", comp_ms},
                    {"step_ms", step},
                    {"step_ms_median", step_p50},
                    {"exposed_ms_median", exposed_p50},
                    {"busy_ms", busy},
                    {"queued_ms", queued},
                    {"launch_to_done_ms", total},
                    {"exposed_ms", exposed},
                    {"ops_per_step", ops_per_step},
                    {"comm_overhead_pct", ovh},
                    {"overlap_pct", overlap},
                    {"speedup_vs_naive", speedup},
                    {"wrong", v.wrong},
                    {"forward_ms", mean_of(v.stats, &perf::StepStats::forward_ms)},
                    {"backward_ms", mean_of(v.stats, &perf::StepStats::backward_ms)},
                    {"optimizer_ms", mean_of(v.stats, &perf::StepStats::optimizer_ms)},
                    {"steps", v.stats.size()},
                    {"shard", std::string(ddp::zero::shard_mode_name(v.shard))},
                    {"coll_mib", coll_mib},
                    {"ring_mib", v.ring_mib},
                    {"opt_state_mib", v.opt_state_mib},
                    // Every timed step, in round order: medians and spreads for whoever needs more
                    // than the means above (docs/tools/figures.py).
                    {"per_step",
                     {{"step_ms", all_of(v.stats, &perf::StepStats::step_ms)},
                      {"exposed_ms", all_of(v.stats, &perf::StepStats::comm_exposed_ms)},
                      {"busy_ms", all_of(v.stats, &perf::StepStats::comm_busy_ms)},
                      {"backward_ms", all_of(v.stats, &perf::StepStats::backward_ms)},
                      {"compress_ms", all_of(v.stats, &perf::StepStats::compress_ms)}}}});
  }
  std::printf("# %s\n", ok ? "OK (all ranks hold identical parameters after every variant)" : "FAILED (#wrong > 0)");
  if (!csv_path_.empty()) {
    std::ofstream f(csv_path_);
    MDDP_CHECK(f.good(), "cannot write " << csv_path_);
    f << "variant,strategy,bucket_mb,step_ms,busy_ms,queued_ms,exposed_ms,ops_per_step,comm_overhead_pct,overlap_pct,"
         "speedup_vs_naive,wrong,forward_ms,backward_ms,optimizer_ms\n";
    for (const auto& r : rows) {
      f << r["variant"].get<std::string>() << ',' << r["strategy"].get<std::string>() << ',' << r["bucket_mb"] << ','
        << r["step_ms"] << ',' << r["busy_ms"] << ',' << r["queued_ms"] << ',' << r["exposed_ms"] << ','
        << r["ops_per_step"] << ',' << r["comm_overhead_pct"] << ',' << r["overlap_pct"] << ',' << r["speedup_vs_naive"]
        << ',' << r["wrong"] << ',' << r["forward_ms"] << ',' << r["backward_ms"] << ',' << r["optimizer_ms"] << '\n';
    }
  }
  if (!json_path_.empty()) {
    std::ofstream f(json_path_);
    MDDP_CHECK(f.good(), "cannot write " << json_path_);
    nlohmann::json j = {{"width", cfg.model.width}, {"depth", cfg.model.depth}, {"global_batch", cfg.global_batch},
                        {"ranks", mpi.size()},      {"comm", opts_.comm},       {"rows", rows},
                        {"simulate_compute_ms", cfg.simulate_compute_ms}};
    f << j.dump(2) << '\n';
  }
  return ok ? 0 : 1;
}

}  // namespace

std::unique_ptr<Command> register_bench_ddp(CLI::App& bench, CLI::App*& sub) {
  sub = bench.add_subcommand("ddp", "Compare DDP strategies (and a --bucket-mb sweep) on one model in one run");
  return std::make_unique<BenchDdpCommand>(sub);
}

}  // namespace microddp::app
