// training_run.hpp — one training run over the ranks of a job, as a library: the --data file and its
// epochs, the trainer's set-up, resume or a fresh start (run_control.hpp), the steps, validation with
// the best model and early stopping, checkpoints and stop signals, and the reporters that print and
// record all of it (run_reporter.hpp). `microddp train` parses its options into TrainingRunOptions
// and calls run(); a program that links microddp_run trains the same way without the command line.
//
// Contract: run() is collective (every rank, the same options and configuration). It returns the
// process's exit code (run_control.hpp: 0 finished or nothing to do, 75 stopped by a signal after a
// checkpoint); bad input is a core::UsageError agreed by every rank. Outputs are a pure function of
// the options as `train` documents them: the header, one line per logged step and the summary on
// rank 0's stdout, the --metrics records, the --trace file, the checkpoints.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/runtime/mpi_runtime.hpp"
#include "core/timer.hpp"
#include "ddp/train_config.hpp"
#include "ddp/trainer.hpp"
#include "ddp/trainer_data_lease.hpp"
#include "kernels/ops.hpp"
#include "perf/step_stats.hpp"
#include "run/best_model.hpp"
#include "run/run_control.hpp"
#include "run/run_reporter.hpp"
#include "run/trace_output.hpp"
#include "run/training_data.hpp"
#include "run/validation_run.hpp"

namespace microddp::run {

struct TrainingRunOptions {
  RunControlOptions control;      // --data, checkpoints, resume, signals
  DataOptions data;               // epochs, shuffle, validation (with --data)
  BestModelOptions best;          // --save-best, --early-stop-*
  std::int64_t log_every = 1;     // a console line every N steps (and the first and the last)
  bool log_every_auto = false;    // N came from the steps: chosen again (steps / 10) when --epochs decides them
  bool in_dim_given = false;      // --in-dim given (else --data's file decides)
  bool classes_given = false;     // --classes given (else --data's file decides; given, the file must match)
  std::string metrics_path;       // --metrics FILE.jsonl ("": none)
  std::string metrics_mode = "append";
  std::string trace_path;         // --trace FILE.json ("": none)
  StepRange trace_window;         // --trace-steps
  bool debug_sync = false;        // --debug-sync (the summary says so)
};

// Builds the run's trainer for its final configuration (once, collective only in Trainer::setup()).
// The caller owns it, and it must outlive the TrainingRun.
using StartTrainer = std::function<ddp::Trainer&(const ddp::TrainConfig&)>;

class TrainingRun {
 public:
  // comm and ops: the communicator and compute backend the trainer will use (they outlive the run).
  TrainingRun(const comm::MpiRuntime& mpi, comm::Communicator& comm, kernels::Ops& ops, TrainingRunOptions o,
              RunEnvironment env);
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  // Collective: the whole run, from `config` (--data may set its shape, --epochs its steps).
  int run(const ddp::TrainConfig& config, const StartTrainer& start_trainer);
  // One more reporter, called after the run's own (console, trace, metrics); before run().
  void add_reporter(std::unique_ptr<RunReporter> reporter) { extra_.push_back(std::move(reporter)); }

 private:
  void open_data();
  void settle_length();
  void start_trainer(const StartTrainer& start);
  bool nothing_to_do() const;
  void add_reporters(const std::string& best_note);
  void train();
  bool evaluate(std::int64_t step, std::int64_t epoch);
  void finish();

  const comm::MpiRuntime& mpi_;
  comm::Communicator& comm_;
  kernels::Ops& ops_;
  TrainingRunOptions o_;
  RunEnvironment env_;
  ddp::TrainConfig config_;
  ddp::Trainer* trainer_ = nullptr;
  // Declared before the lease: the trainer (the caller's) outlives them, and the lease, destroyed
  // first, stops the prefetching loader before the file it reads goes (ddp/trainer_data_lease.hpp).
  std::optional<RunControl> control_;
  const data::DataSource* source_ = nullptr;  // --data (owned by control_), or nullptr: the synthetic set
  std::optional<TrainingData> data_;
  ddp::DataSourceLease data_lease_;
  std::optional<ValidationRun> validation_;
  std::optional<BestModel> best_;
  std::optional<RunFacts> facts_;
  std::vector<std::unique_ptr<RunReporter>> reporters_;
  std::vector<std::unique_ptr<RunReporter>> extra_;  // add_reporter's, moved to the end of reporters_
  std::int64_t start_ = 0;  // steps done before this run
  std::vector<perf::StepStats> all_stats_;
  RunOutcome outcome_;
  core::Stopwatch wall_;
};

}  // namespace microddp::run
