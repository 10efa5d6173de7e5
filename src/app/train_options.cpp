// train_options.cpp — the option groups of the training commands, with their ranges.
#include "app/train_options.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli_values.hpp"
#include "comm/factory.hpp"
#include "core/error.hpp"
#include "ddp/compression/compression_config.hpp"
#include "ddp/numerics.hpp"
#include "ddp/prefetching_input.hpp"
#include "ddp/simulated_compute.hpp"
#include "ddp/zero/shard_plan.hpp"

namespace microddp::app {

namespace {
// Upper bounds: far beyond what fits in memory, low enough that products of sizes cannot overflow
// 64-bit counts (2^24 * 2^24 = 2^48 elements per matrix).
constexpr std::int64_t kMaxDim = 1 << 24;
constexpr std::int64_t kMaxDepth = 4096;
constexpr std::int64_t kMaxSteps = std::int64_t{1} << 40;
// Bucket caps in MiB: a byte (1e-6 MiB) up to a TiB, any gradient this program could hold.
constexpr double kMinBucketMb = 1e-6, kMaxBucketMb = 1e6;
}  // namespace

void add_run_length_options(CLI::App* sub, TrainOptions& o) {
  auto& c = o.config;
  sub->add_option("--steps", c.steps, "Optimizer steps")
      ->check(CLI::Range(std::int64_t{1}, kMaxSteps))
      ->capture_default_str();
  sub->add_option("--global-batch", c.global_batch, "Samples per step, over all ranks (split as evenly as possible)")
      ->check(CLI::Range(std::int64_t{1}, kMaxDim))
      ->capture_default_str();
  sub->add_option("--seed", c.seed, "Seed of initialisation and data")->capture_default_str();
}

void add_model_options(CLI::App* sub, TrainOptions& o) {
  auto& m = o.config.model;
  sub->add_option("--width", m.width, "Hidden width d")
      ->check(CLI::Range(std::int64_t{1}, kMaxDim))
      ->capture_default_str();
  sub->add_option("--depth", m.depth, "Hidden Linear+ReLU layers")
      ->check(CLI::Range(std::int64_t{1}, kMaxDepth))
      ->capture_default_str();
  sub->add_option("--in-dim", o.in_dim, "Input features (default: same as --width; train --data: the file's)")
      ->check(CLI::Range(std::int64_t{1}, kMaxDim));
  sub->add_option("--classes", m.classes, "Output classes (train --data: the file's unless given)")
      ->check(CLI::Range(std::int64_t{2}, kMaxDim))
      ->capture_default_str();
}

void add_optimizer_options(CLI::App* sub, TrainOptions& o) {
  auto& opt = o.config.optimizer;
  sub->add_option("--optimizer", opt.name, "adam | adamw | sgd")
      ->check(CLI::IsMember({"adam", "adamw", "sgd"}))
      ->capture_default_str();
  sub->add_option("--lr", opt.lr, "Learning rate")->check(finite_range(1e-12, 1e3))->capture_default_str();
  sub->add_option("--weight-decay", opt.weight_decay, "Weight decay (L2 for adam/sgd, decoupled for adamw)")
      ->check(finite_range(0.0, 1.0))
      ->capture_default_str();
  sub->add_option("--momentum", opt.momentum, "SGD momentum")->check(finite_range(0.0, 0.9999))->capture_default_str();
}

void add_threads_option(CLI::App* sub, TrainOptions& o) {
  sub->add_option("--threads", o.threads,
                  "BLAS threads per rank (0 = OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, SLURM_CPUS_PER_TASK, else this "
                  "rank's CPUs / ranks on this node)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
}

void add_accumulation_option(CLI::App* sub, TrainOptions& o) {
  sub->add_option("--accum-steps", o.config.accum_steps,
                  "Gradient accumulation: micro-batches of --global-batch per optimizer step (sync on the last only)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->capture_default_str();
}

void add_prefetch_option(CLI::App* sub, TrainOptions& o) {
  sub->add_option("--prefetch", o.config.prefetch,
                  "Batches a loader thread prepares ahead while the step computes (0 = none: each batch is filled "
                  "on the step's thread)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{ddp::PrefetchingInput::kMaxDepth}))
      ->capture_default_str();
}

void add_strategy_option(CLI::App* sub, TrainOptions& o) {
  add_strategy_option(sub, "--strategy", o.config.strategy, "Gradient synchronisation strategy");
}

void add_shard_option(CLI::App* sub, TrainOptions& o) {
  // Sharded data parallelism (docs/zero.md): shards follow the strategy's buckets.
  sub->add_option("--shard", o.shard,
                  "Shard across ranks: none (plain DDP), optimizer (ZeRO-1: Adam state), gradients (ZeRO-2: also "
                  "the reduced gradient); reduce-scatter + all-gather instead of all-reduce")
      ->check(CLI::IsMember(ddp::zero::kShardModeNames.names()))
      ->capture_default_str();
}

void add_bucket_options(CLI::App* sub, TrainOptions& o, bool with_cap) {
  auto& s = o.config.sync_options;
  if (with_cap) {
    sub->add_option("--bucket-mb", s.bucket_mb, "Bucket cap in MiB (bucketed strategy)")
        ->check(finite_range(kMinBucketMb, kMaxBucketMb))
        ->capture_default_str();
  }
  sub->add_option("--first-bucket-mb", s.first_bucket_mb,
                  "Cap of the first bucket in MiB, 0 = same as --bucket-mb (PyTorch DDP uses 1)")
      ->check(finite_range(0.0, kMaxBucketMb))
      ->capture_default_str();
}

void add_comm_options(CLI::App* sub, TrainOptions& o) {
  std::string backends;
  for (const auto& b : comm::available_backends()) backends += (backends.empty() ? "" : ", ") + b;
  sub->add_option("--comm", o.comm, "Communication backend (this build: " + backends + ")")->capture_default_str();
  // Five minutes: far above any healthy collective of the model sizes we run (a 1 GiB all-reduce
  // over 1 Gbit/s Ethernet takes ~16 s), far below a job's wall-clock limit.
  sub->add_option("--comm-timeout", o.comm_timeout_s,
                  "Seconds one collective may take before the job is aborted with a report naming it (0 = never)")
      ->check(finite_range(0.0, 1e6))
      ->capture_default_str();
  sub->add_flag("--debug-sync", o.debug_sync,
                "Compare every collective's fingerprint across ranks before it runs (slow: for finding a desync)")
      ->disable_flag_override();
  // Desync detection (docs/reliability.md): one 40-byte-per-rank all-gather per check; 100 steps
  // keeps it far below 0.1% of the run (measured there) while a desync surfaces within 100 steps.
  sub->add_option("--sync-check-every", o.config.sync_check_every,
                  "Compare the collective sequence (count and fingerprint hash) across ranks at start-up and every "
                  "N steps (0 = start-up only)")
      ->check(CLI::Range(std::int64_t{0}, kMaxSteps))
      ->capture_default_str();
}

void add_reliability_options(CLI::App* sub, TrainOptions& o) {
  auto& c = o.config;
  // Divergence check (docs/reliability.md). 100 steps: one check (hash 3 MiB of parameters and
  // Adam state, one all-reduce of 16 bytes per tensor) took 0.14 ms at the default model, ~3.6%
  // of one 4 ms step, so ~0.04% of the run; a divergence still surfaces within 100 steps.
  sub->add_option(
         "--check-every", c.check_every,
         "Compare parameter/optimizer-state hashes across ranks every N steps and at the end (0 = only at the end)")
      ->check(CLI::Range(std::int64_t{0}, kMaxSteps))
      ->capture_default_str();
  sub->add_option("--on-nan", o.on_nan, "Non-finite loss or gradient on any rank: abort the run, or skip the update")
      ->check(CLI::IsMember(ddp::kNanPolicyNames.names()))
      ->capture_default_str();
  sub->add_option("--clip-grad-norm", c.clip_grad_norm,
                  "Scale the global gradient to at most this L2 norm before the optimizer step (0 = off)")
      ->check(finite_range(0.0, 1e6))
      ->capture_default_str();
}

void add_simulate_compute_option(CLI::App* sub, TrainOptions& o) {
  sub->add_option("--simulate-compute-ms", o.config.simulate_compute_ms,
                  "Emulate an accelerator: every backward pass also waits this many ms in total (shared among the "
                  "layers by parameter count), sleeping so the core is free for communication; same results (0 = off)")
      ->check(finite_range(0.0, ddp::kMaxSimulateComputeMs))
      ->capture_default_str();
}

void add_log_every_option(CLI::App* sub, TrainOptions& o) {
  sub->add_option("--log-every", o.log_every, "Print a progress line every N steps (0 = about 10 lines)")
      ->check(CLI::Range(std::int64_t{0}, kMaxSteps));
}

void add_metrics_option(CLI::App* sub, TrainOptions& o) {
  sub->add_option("--metrics", o.metrics_path,
                  "Write one JSON object per step, then a summary, to FILE.jsonl (rank 0); jobs/plot_metrics.py "
                  "draws its curves");
  sub->add_option("--metrics-mode", o.metrics_mode,
                  "append: after what FILE holds, a start/resume record first (never truncates); overwrite: "
                  "truncate FILE first")
      ->check(CLI::IsMember({"append", "overwrite"}))
      ->capture_default_str();
}

void add_trace_option(CLI::App* sub, TrainOptions& o) {
  sub->add_option("--trace", o.trace_path, "Write a Chrome/Perfetto trace of every rank to FILE.json (rank 0 writes)");
}

void add_distributed_training_options(CLI::App* sub, TrainOptions& o) {
  add_run_length_options(sub, o);
  add_model_options(sub, o);
  add_optimizer_options(sub, o);
  add_threads_option(sub, o);
  add_accumulation_option(sub, o);
  add_comm_options(sub, o);
  add_reliability_options(sub, o);
  add_compression_options(sub, o);
  add_simulate_compute_option(sub, o);
}

void add_compression_options(CLI::App* sub, TrainOptions& o) {
  auto& c = o.config;
  // Gradient compression (docs/compression.md).
  add_compression_option(sub, "--grad-compression", c.compression.mode, "Gradient wire format");
  o.powersgd_rank_opt = sub->add_option("--powersgd-rank", c.compression.powersgd_rank,
                                        "PowerSGD: rank of each weight matrix's approximation")
                            ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}))
                            ->capture_default_str();
  o.powersgd_start_opt = sub->add_option("--powersgd-start-step", c.compression.powersgd_start_step,
                                         "PowerSGD: uncompressed (fp32) steps before compression starts")
                             ->check(CLI::Range(std::int64_t{0}, kMaxSteps))
                             ->capture_default_str();
  o.error_feedback_opt = sub->add_option("--error-feedback", o.error_feedback,
                                         "Add each rank's previous compression error to its gradient (lossy modes)")
                             ->check(CLI::IsMember({"on", "off"}))
                             ->capture_default_str();
}

void validate_backend_name(const std::string& name, const std::string& option) {
  const auto names = comm::available_backends();
  std::string list;
  for (const auto& b : names) list += (list.empty() ? "" : ", ") + b;
  MDDP_USAGE_CHECK(std::find(names.begin(), names.end(), name) != names.end(),
                   "unknown " << option << " '" << name << "' (this build has: " << list << ")");
}

void validate_train_options(TrainOptions& o) {
  auto& c = o.config;
  // --in-dim not given: the course model is Linear(d, d) all the way, so the input has d features.
  c.model.in_dim = o.in_dim > 0 ? o.in_dim : c.model.width;
  validate_backend_name(o.comm, "--comm");
  c.on_nan = ddp::parse_nan_policy(o.on_nan);
  c.shard = ddp::zero::parse_shard_mode(o.shard);
  const ddp::StrategyRow& strategy = ddp::strategy_row(c.strategy);
  MDDP_USAGE_CHECK(
      strategy.no_shard.empty() || c.shard == ddp::zero::ShardMode::None,
      "--strategy " << strategy.name << " (" << strategy.no_shard << ") does not shard: leave --shard at none");
  auto given = [](const CLI::Option* opt) { return opt != nullptr && opt->count() > 0; };
  c.compression.error_feedback = o.error_feedback == "on";
  ddp::validate_compression(c.compression, given(o.powersgd_rank_opt) || given(o.powersgd_start_opt));
  if (given(o.error_feedback_opt) && !ddp::compression_mode_row(c.compression.mode).lossy) {
    std::vector<std::string_view> lossy;  // "fp16, bf16 or powersgd"
    for (const auto& row : ddp::compression_modes()) {
      if (row.lossy) lossy.push_back(row.name);
    }
    std::string list;
    for (std::size_t i = 0; i < lossy.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == lossy.size() ? " or " : ", ") + std::string(lossy[i]);
    }
    MDDP_USAGE_CHECK(false, "--error-feedback needs a lossy --grad-compression (" << list << ")");
  }
  if (o.log_every == 0) o.log_every = std::max<std::int64_t>(1, c.steps / 10);
}

}  // namespace microddp::app
