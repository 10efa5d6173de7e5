// train_options.hpp — the options shared by every command that trains (train, baseline, manual,
// benchmarks): model shape, optimizer, data, strategy, backend, threads.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "comm/mpi_runtime.hpp"
#include "ddp/trainer.hpp"

namespace microddp::app {

struct TrainOptions {
  ddp::TrainConfig config;
  std::string comm = "mpi";
  std::int64_t in_dim = 0;  // 0: same as width (train --data: the file's)
  int threads = 0;  // 0: automatic (cores on this node / ranks on this node)
  std::int64_t log_every = 0;  // 0: automatic (about 10 lines per run)
  std::string metrics_path;    // --metrics FILE.jsonl
  double comm_timeout_s = comm::kDefaultCommTimeoutS;  // --comm-timeout: abort when one collective (or an
                                                       // MPI section, mpi_runtime.hpp) exceeds it (0: off)
  std::string trace_path;      // --trace FILE.json: Chrome/Perfetto trace of all ranks (written by rank 0)
  bool debug_sync = false;     // --debug-sync: compare every collective's fingerprint across ranks
  std::string on_nan = "abort";  // --on-nan abort|skip (parsed into config.on_nan by validate)
  std::string error_feedback = "on";  // --error-feedback on|off (into config.compression by validate)
  // Given on the command line? (settings that only some compression modes use are errors otherwise)
  CLI::Option* powersgd_rank_opt = nullptr;
  CLI::Option* powersgd_start_opt = nullptr;
  CLI::Option* error_feedback_opt = nullptr;
};

// Adds the options to `sub`. `with_dist`: also --strategy and --comm (not for single-process commands).
void add_train_options(CLI::App* sub, TrainOptions& opts, bool with_dist);
// Checks value combinations CLI11 validators cannot express; throws core::UsageError.
void validate_train_options(TrainOptions& opts);

}  // namespace microddp::app
