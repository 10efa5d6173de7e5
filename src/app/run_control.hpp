// run_control.hpp — what `train` adds around the trainer for long HPC runs: HDF5 data
// (--data), periodic crash-safe checkpoints (--checkpoint-every/--checkpoint-dir/--keep),
// resume (--resume auto|never|PATH, --allow-changed), a fresh start from trained weights
// (--init-from), the best model (best.h5) and signal-driven checkpoint-and-exit (SIGTERM, SIGUSR1).
//
// Nothing is lost (docs/checkpoint_format.md, "Resume rules"): a checkpoint that does not fit the
// run is refused (exit 2, naming every difference), never skipped; a run does not write into a
// --checkpoint-dir that holds another run's checkpoints (io/checkpoint_ownership.hpp) unless
// --overwrite says to delete them; rotation deletes only this run's (io/run_info.hpp: the run id).
//
// Exit codes of `microddp train` (docs/checkpoint_format.md):
//   0   finished all --steps (also: resumed a checkpoint that had already finished)
//   75  EX_TEMPFAIL: a signal arrived, every rank agreed, a checkpoint was written: requeue me
//   2   bad input: options, data file, a --resume PATH that is invalid, a checkpoint that does not
//       fit, a --checkpoint-dir of another run
//   1   anything else (I/O failure, bug): the job was aborted; or every rank stopped cleanly at the
//       same step on a non-finite loss/gradient (--on-nan abort) or a divergence check
//
// Signals: the handler only sets a sig_atomic_t flag (async-signal-safe). After every step the
// ranks all-reduce (MAX) the flag, so they all stop after the same step even if the signal reached
// only some of them (or reached them at different steps).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "comm/runtime/mpi_runtime.hpp"
#include "core/fault_plan.hpp"
#include "data/data_source.hpp"
#include "io/checkpoint_save.hpp"
#include "io/hdf5_data_source.hpp"
#include "ddp/trainer.hpp"
#include "io/run_info.hpp"

namespace microddp::app {

inline constexpr int kExitRequeue = 75;  // EX_TEMPFAIL (sysexits.h)

struct RunControlOptions {
  std::int64_t checkpoint_every = 0;  // 0: only on signal
  std::string checkpoint_dir = "checkpoints";
  int keep = 3;
  std::string resume;            // "" or "never", "auto", or a path
  bool overwrite = false;        // --overwrite: delete another run's checkpoints in --checkpoint-dir
  std::string allow_changed;     // --allow-changed LIST (app/allow_changed.hpp)
  std::string init_from;         // --init-from FILE: a fresh run starts from these weights
  std::string writer = "rank0";  // rank0 | parallel: measured choice, docs/checkpoint_format.md
  std::string data_path;         // --data FILE.h5
  io::DataKeys keys;             // --inputs-key, --labels-key: the dataset names in --data (and --val-data)
  std::int64_t data_memory_mb = io::Hdf5DataSource::kResidentLimitBytes >> 20;  // --data-memory-mb
  core::FaultPlan faults;        // the save's fault points (test hooks, app/fault_env.hpp)
};

void add_run_control_options(CLI::App* sub, RunControlOptions& o);

// Collective: opens the HDF5 data file `path` on every rank, rank 0 first (it infers the classes
// when neither the file nor classes_option says, and the others take its answer); a bad file is
// one agreed core::UsageError naming `option` on every rank (exit 2).
// resident_limit_bytes: up to this size its rows are read once into memory, else streamed
// (io::Hdf5DataSource::set_resident_limit_bytes).
std::unique_ptr<data::DataSource> open_data_file(const comm::MpiRuntime& mpi, const std::string& path,
                                                 std::int64_t classes_option, const std::string& option,
                                                 const io::DataKeys& keys, std::int64_t resident_limit_bytes);
void validate_run_control_options(const RunControlOptions& o);

class RunControl {
 public:
  RunControl(const RunControlOptions& o, const comm::MpiRuntime& mpi, std::string backend);
  ~RunControl();

  // Opens --data on every rank (errors agreed across ranks); nullptr for the synthetic set.
  // classes_option: --classes when given, else 0 (then the file's `classes` attribute, or max
  // label + 1 found by rank 0).
  const data::DataSource* open_data_source(std::int64_t classes_option);
  // One line on the --data file for the run's header, printed once by rank 0 ("" without --data):
  // its shape, dtypes (a float64 conversion is said here), classes and where they came from.
  std::string data_summary() const;
  // After Trainer::setup(), collective: loads the checkpoint asked for, or starts a fresh run (a new
  // run id; --init-from's weights); then refuses (or with --overwrite clears) a --checkpoint-dir that
  // holds another run's checkpoints. Prints notes on rank 0.
  void start(ddp::Trainer& trainer);
  bool resumed() const { return resumed_; }
  // The run record every checkpoint carries (identity, plan history, best model): the same on every rank.
  io::RunInfo& run() { return run_; }
  const io::RunInfo& run() const { return run_; }
  // After each step: periodic checkpoint; agreed signal check. Returns true to stop now.
  bool after_step(ddp::Trainer& trainer, comm::Communicator& comm);
  // Collective: writes <checkpoint-dir>/best.h5 (train --save-best).
  void save_best(const ddp::Trainer& trainer);
  // Collective: the run stops early (train --early-stop-patience): recorded, and checkpointed when
  // the run checkpoints (--checkpoint-every), so that a resume knows there is nothing left to do.
  void stop_early(const ddp::Trainer& trainer);
  const std::string& checkpoint_dir() const { return o_.checkpoint_dir; }
  int exit_code() const { return stopped_by_signal_ ? kExitRequeue : 0; }

 private:
  void save(const ddp::Trainer& trainer, const char* why);
  io::SaveResult write(const ddp::Trainer& trainer, const std::string& path);
  void fresh_start(ddp::Trainer& trainer);
  void claim_checkpoint_dir();
  void note(const std::string& line) const;

  RunControlOptions o_;
  const comm::MpiRuntime& mpi_;
  std::string backend_;
  std::unique_ptr<data::DataSource> data_;  // an io::Hdf5DataSource when --data was given
  std::int64_t last_saved_step_ = -1;
  std::int64_t saves_ = 0;  // saves started by this process (the save fault points count them)
  bool stopped_by_signal_ = false;
  bool resumed_ = false;
  io::RunInfo run_;
};

}  // namespace microddp::app
