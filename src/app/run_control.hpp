// run_control.hpp — what `train` adds around the trainer for long HPC runs: HDF5 data
// (--data), periodic crash-safe checkpoints (--checkpoint-every/--checkpoint-dir/--keep),
// resume (--resume auto|PATH) and signal-driven checkpoint-and-exit (SIGTERM, SIGUSR1).
//
// Exit codes of `microddp train` (docs/checkpoint_format.md):
//   0   finished all --steps (also: resumed a checkpoint that had already finished)
//   75  EX_TEMPFAIL: a signal arrived, every rank agreed, a checkpoint was written: requeue me
//   2   bad input: options, data file, or a --resume PATH that is invalid or does not fit
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
#include "ddp/trainer.hpp"

namespace microddp::app {

inline constexpr int kExitRequeue = 75;  // EX_TEMPFAIL (sysexits.h)

struct RunControlOptions {
  std::int64_t checkpoint_every = 0;  // 0: only on signal
  std::string checkpoint_dir = "checkpoints";
  int keep = 3;
  std::string resume;            // "", "auto" or a path
  std::string writer = "rank0";  // rank0 | parallel: measured choice, docs/checkpoint_format.md
  std::string data_path;         // --data FILE.h5
  core::FaultPlan faults;        // the save's fault points (test hooks, app/fault_env.hpp)
};

void add_run_control_options(CLI::App* sub, RunControlOptions& o);

// Collective: opens the HDF5 data file `path` on every rank, rank 0 first (it infers the classes
// when neither the file nor classes_option says, and the others take its answer); a bad file is
// one agreed core::UsageError naming `option` on every rank (exit 2).
std::unique_ptr<data::DataSource> open_data_file(const comm::MpiRuntime& mpi, const std::string& path,
                                                 std::int64_t classes_option, const std::string& option);
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
  // After Trainer::setup(): loads the checkpoint asked for (prints notes on rank 0).
  void resume(ddp::Trainer& trainer);
  // After each step: periodic checkpoint; agreed signal check. Returns true to stop now.
  bool after_step(ddp::Trainer& trainer, comm::Communicator& comm);
  int exit_code() const { return stopped_by_signal_ ? kExitRequeue : 0; }

 private:
  void save(const ddp::Trainer& trainer, const char* why);

  RunControlOptions o_;
  const comm::MpiRuntime& mpi_;
  std::string backend_;
  std::unique_ptr<data::DataSource> data_;  // an io::Hdf5DataSource when --data was given
  std::int64_t last_saved_step_ = -1;
  std::int64_t saves_ = 0;  // saves started by this process (the save fault points count them)
  bool stopped_by_signal_ = false;
};

}  // namespace microddp::app
