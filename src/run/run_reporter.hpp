// run_reporter.hpp — what a training run (run/training_run.hpp) tells the objects that print and
// record it, and when: the console's header and step table, its summary, the --metrics JSONL
// record and the --trace file are reporters; a new output is one more RunReporter, not another
// branch in the loop.
//
// Contract: the run calls every reporter on every rank, in the order they were added, at the same
// points: on_start() once before the first step, on_step() after each step, on_validation() after
// each evaluation, on_early_stop() when early stopping ends the run, before_end() (collective: a
// reporter may all-reduce there) and on_end() (collective too: the trace gathers every rank's
// events). A reporter that writes only on rank 0 checks the rank itself. Reporters only read: they
// change nothing of the run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/runtime/mpi_runtime.hpp"
#include "core/event_log.hpp"
#include "ddp/evaluator.hpp"
#include "ddp/input_pipeline.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "perf/step_stats.hpp"
#include "run/best_model.hpp"
#include "run/run_control.hpp"
#include "run/training_data.hpp"

namespace microddp::run {

// The process a run computes in, as the header and the metrics summary name it.
struct RunEnvironment {
  std::string backend;      // the communication backend in use (--comm, or the device's default)
  int threads = 1;          // BLAS threads per rank
  std::string threads_text; // how they were chosen (the header's "threads" line)
  std::string device_note;  // why a GPU run did not take the default backend, or ""
};

// What the reporters read for the whole run; set before the first step, unchanged after it.
struct RunFacts {
  const comm::MpiRuntime& mpi;
  const ddp::TrainConfig& config;  // the run's: --data's shape, --epochs' steps applied
  const ddp::Trainer& trainer;
  const kernels::Ops& ops;
  const RunEnvironment& env;
  const TrainingData* data;  // nullptr: the synthetic set
  const RunControl& control;
  const BestModel& best;
  std::int64_t start = 0;     // steps done before this run (a resumed checkpoint's step)
  std::int64_t log_every = 1; // a console line every log_every steps
  bool root() const { return mpi.rank() == 0; }
};

// After one step.
struct StepReport {
  std::int64_t index = 0;  // 0-based step (the trainer's), printed as index + 1
  const ddp::StepRecord& record;
  const perf::StepStats& stats;
  const std::vector<core::Event>& events;  // this step's events (the trainer's one-step log)
  double samples_per_s = 0.0;
  std::int64_t epoch = 0;  // 1-based epoch with --data, else 0
  double elapsed_s = 0.0;  // since the first step of this run began
};

// After one evaluation of the validation set.
struct ValidationReport {
  std::int64_t step = 0;  // the steps done when it ran
  std::int64_t epoch = 0;
  ddp::EvalCounts counts;
  bool improved = false;  // on the best so far (BestModel::observe)
};

// The run's end, for the summaries.
struct RunOutcome {
  std::int64_t end = 0;        // steps done at the end (the config's steps, or earlier when stopped)
  std::int64_t steps_run = 0;  // by this run: end - start
  double first_loss = 0.0, last_loss = 0.0;
  double total_s = 0.0;
  perf::RunSummary summary;  // steady state: the first step skipped when there are more
  std::uint64_t checksum = 0;
  ddp::BackgroundWork background;
  double background_ms_per_step = 0.0;  // the loader's fill time per step (accum_steps batches)
  ddp::EvalCounts last_val;             // rows == 0: no evaluation
  std::int64_t last_val_step = 0;
  std::string stop_reason;  // early stopping's, when it stopped the run
};

class RunReporter {
 public:
  virtual ~RunReporter() = default;
  virtual void on_start() {}
  virtual void on_step(const StepReport& /*step*/) {}
  virtual void on_validation(const ValidationReport& /*v*/) {}
  virtual void on_early_stop(std::int64_t /*step*/, const std::string& /*reason*/) {}
  virtual void before_end(comm::Communicator& /*comm*/) {}
  virtual void on_end(comm::Communicator& /*comm*/, const RunOutcome& /*outcome*/) {}
};

}  // namespace microddp::run
