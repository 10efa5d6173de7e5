// train_options.hpp — the options of the commands that train (train, baseline, manual, hooks,
// analyze, bench ddp), as groups that compose: each add_*_options function registers one group on a
// subcommand, and a command registers exactly the groups it uses, so no command offers an option it
// would ignore. The defaults are the course model (a command may change them before registering).
//
// Groups and the options they add:
//   run length     --steps --global-batch --seed
//   model          --width --depth --in-dim --classes
//   optimizer      --optimizer --lr --weight-decay --momentum
//   threads        --threads
//   accumulation   --accum-steps
//   prefetch       --prefetch
//   strategy       --strategy
//   buckets        --bucket-mb (unless the command takes a list of caps) --first-bucket-mb
//   comm           --comm --comm-timeout --debug-sync --sync-check-every
//   reliability    --check-every --on-nan --clip-grad-norm
//   emulation      --simulate-compute-ms
//   output         --log-every, --metrics, --trace (one function each)
// validate_train_options() then completes what depends on several values; bad values are a
// core::UsageError (exit 2 before MPI starts).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "comm/runtime/mpi_runtime.hpp"
#include "ddp/train_config.hpp"

namespace microddp::app {

struct TrainOptions {
  ddp::TrainConfig config;
  std::string comm = "mpi";
  std::int64_t in_dim = 0;                             // 0: same as width (train --data: the file's)
  int threads = 0;                                     // 0: automatic (cores on this node / ranks on this node)
  std::int64_t log_every = 0;                          // 0: automatic (about 10 lines per run)
  std::string metrics_path;                            // --metrics FILE.jsonl
  std::string metrics_mode = "append";                 // --metrics-mode append|overwrite (run/metrics_log.hpp)
  double comm_timeout_s = comm::kDefaultCommTimeoutS;  // --comm-timeout: abort when one collective (or an
                                                       // MPI section, mpi_runtime.hpp) exceeds it (0: off)
  std::string trace_path;             // --trace FILE.json: Chrome/Perfetto trace of all ranks (written by rank 0)
  bool debug_sync = false;            // --debug-sync: compare every collective's fingerprint across ranks
  std::string on_nan = "abort";       // --on-nan abort|skip (parsed into config.on_nan by validate)
  std::string shard = "none";         // --shard none|optimizer|gradients (parsed into config.shard by validate)
  std::string error_feedback = "on";  // --error-feedback on|off (into config.compression by validate)
  // Given on the command line? (settings that only some compression modes use are errors otherwise)
  CLI::Option* powersgd_rank_opt = nullptr;
  CLI::Option* powersgd_start_opt = nullptr;
  CLI::Option* error_feedback_opt = nullptr;
};

void add_run_length_options(CLI::App* sub, TrainOptions& o);
void add_model_options(CLI::App* sub, TrainOptions& o);
void add_optimizer_options(CLI::App* sub, TrainOptions& o);
void add_threads_option(CLI::App* sub, TrainOptions& o);
void add_accumulation_option(CLI::App* sub, TrainOptions& o);
// --prefetch N: batches the input pipeline prepares ahead (ddp/input_pipeline.hpp).
void add_prefetch_option(CLI::App* sub, TrainOptions& o);
void add_strategy_option(CLI::App* sub, TrainOptions& o);
// --shard none|optimizer|gradients (ZeRO, docs/zero.md): parsed into config.shard by validate_train_options.
void add_shard_option(CLI::App* sub, TrainOptions& o);
// `with_cap`: also --bucket-mb (commands that sweep several caps register their own list).
void add_bucket_options(CLI::App* sub, TrainOptions& o, bool with_cap);
void add_comm_options(CLI::App* sub, TrainOptions& o);
void add_reliability_options(CLI::App* sub, TrainOptions& o);
// --simulate-compute-ms X: every backward pass also sleeps X ms, spread over the layers by parameter
// count, as an accelerator's backward would leave the core to communication (ddp/simulated_compute.hpp).
void add_simulate_compute_option(CLI::App* sub, TrainOptions& o);
void add_log_every_option(CLI::App* sub, TrainOptions& o);
void add_metrics_option(CLI::App* sub, TrainOptions& o);
void add_trace_option(CLI::App* sub, TrainOptions& o);

// What every command that runs the trainer over ranks takes: run length, model, optimizer,
// threads, accumulation, comm, reliability and the simulated compute (strategy, buckets and output are the command's).
void add_distributed_training_options(CLI::App* sub, TrainOptions& o);
// --grad-compression, --powersgd-rank, --powersgd-start-step, --error-feedback (docs/compression.md);
// part of add_distributed_training_options.
void add_compression_options(CLI::App* sub, TrainOptions& o);

// Completes and checks value combinations CLI11 validators cannot express; throws core::UsageError.
void validate_train_options(TrainOptions& opts);

// Throws core::UsageError unless `name` is a backend of this build; `option` names the source.
void validate_backend_name(const std::string& name, const std::string& option);

}  // namespace microddp::app
