// training_run.cpp — the run in the order it happens: data, length, trainer, resume, steps, end.
#include "run/training_run.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <utility>

#include "core/error.hpp"
#include "model/lr_schedule.hpp"
#include "run/console_summary.hpp"
#include "run/console_table.hpp"
#include "run/metrics_report.hpp"
#include "run/trace_report.hpp"

namespace microddp::run {

namespace {

// The schedule's --decay-steps default is the run's total steps, known only now (with --epochs:
// after the data file decided them); a schedule that does not fit them is an agreed usage error
// (every rank reaches it from the same options).
void resolve_lr_schedule(model::LrScheduleConfig& c, float base_lr, std::int64_t run_steps) {
  const bool decays = c.kind == model::LrScheduleKind::Cosine || c.kind == model::LrScheduleKind::Linear;
  if (decays && c.decay_steps == 0) c.decay_steps = run_steps;
  try {
    (void)model::LrSchedule(base_lr, c);
  } catch (const core::UsageError& e) {
    core::throw_usage_error(e.what(), /*agreed=*/true);
  }
}

}  // namespace

TrainingRun::TrainingRun(const comm::MpiRuntime& mpi, comm::Communicator& comm, kernels::Ops& ops,
                         TrainingRunOptions o, RunEnvironment env)
    : mpi_(mpi), comm_(comm), ops_(ops), o_(std::move(o)), env_(std::move(env)) {}

TrainingRun::~TrainingRun() = default;

int TrainingRun::run(const ddp::TrainConfig& config, const StartTrainer& start_trainer) {
  config_ = config;
  control_.emplace(o_.control, mpi_, env_.backend);
  open_data();
  settle_length();
  this->start_trainer(start_trainer);
  if (nothing_to_do()) return 0;
  // The best model and early stopping continue from the checkpoint's record.
  best_.emplace(o_.best);
  const std::string best_note = best_->restore(control_->run());
  best_->store(control_->run());
  add_reporters(best_note);
  train();
  finish();
  return control_->exit_code();
}

// --data: the file decides in_dim and classes unless --in-dim / --classes were given (then they
// must match it: set_data_source refuses a mismatch). It is read in epochs (training_data.hpp).
void TrainingRun::open_data() {
  source_ = control_->open_data_source(o_.classes_given ? config_.model.classes : 0);
  if (source_ == nullptr) return;
  if (!o_.in_dim_given) config_.model.in_dim = source_->in_dim();
  if (!o_.classes_given) config_.model.classes = source_->classes();
  o_.data.keys = o_.control.keys;
  o_.data.resident_limit_bytes = o_.control.data_memory_mb << 20;
  data_.emplace(o_.data, mpi_, *source_, config_.seed, config_.global_batch, config_.accum_steps);
}

// --epochs E decides the steps; the learning-rate schedule then knows the run's length.
void TrainingRun::settle_length() {
  if (data_ && o_.data.epochs > 0) {
    config_.steps = data_->epoch_steps();
    if (o_.log_every_auto) o_.log_every = std::max<std::int64_t>(1, config_.steps / 10);
  }
  resolve_lr_schedule(config_.lr_schedule, config_.optimizer.lr, config_.steps);
}

// The trainer for the final configuration, its data and validation set; then resume or a fresh start.
void TrainingRun::start_trainer(const StartTrainer& start) {
  trainer_ = &start(config_);
  if (data_) {
    data_lease_ = trainer_->set_data_source(data_->train_source());
    trainer_->set_epochs(data_->epochs());
  }
  if (data_ && data_->val_source() != nullptr) validation_.emplace(config_.model, ops_, *data_->val_source());
  trainer_->setup();
  control_->start(*trainer_);
  start_ = trainer_->steps_done();
}

bool TrainingRun::nothing_to_do() const {
  if (control_->run().stopped_early) {
    if (mpi_.rank() == 0) {
      std::printf("# nothing to do: the run stopped early at step %" PRId64
                  " (early stopping); start a new one from its weights with --init-from\n",
                  start_);
    }
    return true;
  }
  if (start_ >= config_.steps) {
    if (mpi_.rank() == 0)
      std::printf("# nothing to do: the checkpoint is at step %" PRId64 " of %" PRId64 "\n", start_, config_.steps);
    return true;
  }
  return false;
}

// The console's table and summary, then the trace and the metrics (the order they report in: the
// trace's line follows the summary). The metrics file is opened here, once there is something to
// do: a run that ends at once leaves it as it was.
void TrainingRun::add_reporters(const std::string& best_note) {
  facts_.emplace(RunFacts{mpi_, config_, *trainer_, ops_, env_, data_ ? &*data_ : nullptr, *control_, *best_, start_,
                          o_.log_every});
  reporters_.push_back(std::make_unique<ConsoleTable>(*facts_, best_note));
  reporters_.push_back(std::make_unique<ConsoleSummary>(*facts_, o_.debug_sync));
  if (!o_.trace_path.empty()) {
    reporters_.push_back(std::make_unique<TraceReport>(*facts_, trainer_->events(), o_.trace_path, o_.trace_window));
  }
  if (!o_.metrics_path.empty()) {
    reporters_.push_back(std::make_unique<MetricsReport>(*facts_, o_.metrics_path, o_.metrics_mode));
  }
  for (auto& r : extra_) reporters_.push_back(std::move(r));
  extra_.clear();
  for (auto& r : reporters_) r->on_start();
}

void TrainingRun::train() {
  all_stats_.reserve(static_cast<std::size_t>(config_.steps));
  wall_.restart();
  ddp::Trainer& trainer = *trainer_;
  for (std::int64_t s = start_; s < config_.steps; ++s) {
    const ddp::StepRecord rec = trainer.step();
    const std::vector<core::Event>& events = trainer.events().events();
    const perf::StepStats st = perf::step_stats(events, rec.step);
    all_stats_.push_back(st);
    if (s == start_) outcome_.first_loss = rec.loss;
    outcome_.last_loss = rec.loss;
    const double samples_per_s =
        static_cast<double>(config_.global_batch * config_.accum_steps) / (st.step_ms * 1e-3);
    const std::int64_t epoch = data_ ? data_->epoch_of_step(rec.step + 1) : 0;
    const StepReport report{s, rec, st, events, samples_per_s, epoch, wall_.elapsed_s()};
    for (auto& r : reporters_) r->on_step(report);
    if (validation_ && data_->eval_due(rec.step + 1, config_.steps) && evaluate(rec.step + 1, epoch)) break;
    if (!config_.faults.empty() && config_.faults.fires(kTruncateDataPoint, mpi_.rank(), rec.step + 1) != nullptr) {
      truncate_to_half(o_.control.data_path);  // test hook (training_data.hpp)
    }
    // A data file that changed under the run stops it (exit 2) before the next epoch reads it.
    if (data_ && data_->step_ends_epoch(rec.step + 1)) data_->check_files_unchanged(mpi_);
    if (control_->after_step(trainer, comm_)) break;  // agreed signal: checkpointed, stop
  }
}

// Collective: every rank evaluates its share; the counts are all-reduced (same bits at any np), so
// every rank makes the same decisions (best.h5 is a collective save). True: early stopping ends the run.
bool TrainingRun::evaluate(std::int64_t step, std::int64_t epoch) {
  outcome_.last_val = validation_->run(comm_, *trainer_);
  outcome_.last_val_step = step;
  const bool improved = best_->observe(outcome_.last_val.mean_loss(), outcome_.last_val.accuracy(), step);
  best_->store(control_->run());
  for (auto& r : reporters_) r->on_validation(ValidationReport{step, epoch, outcome_.last_val, improved});
  if (improved && best_->saves_best()) control_->save_best(*trainer_);
  if (!best_->should_stop()) return false;
  outcome_.stop_reason = best_->stop_reason();
  for (auto& r : reporters_) r->on_early_stop(step, outcome_.stop_reason);
  control_->stop_early(*trainer_);
  return true;
}

void TrainingRun::finish() {
  trainer_->check_divergence();  // at the end of every run (no-op if the last step was just checked)
  for (auto& r : reporters_) r->before_end(comm_);
  outcome_.total_s = wall_.elapsed_s();
  // Steady state: skip the first step (cold caches, lazy library set-up) when there are more.
  const std::vector<perf::StepStats> steady(all_stats_.begin() + (all_stats_.size() > 1 ? 1 : 0), all_stats_.end());
  outcome_.summary = perf::summarize(steady);
  outcome_.checksum = trainer_->param_checksum();
  outcome_.background = trainer_->input_background();
  const ddp::BackgroundWork& background = outcome_.background;
  if (background.batches > 0) {
    outcome_.background_ms_per_step = 1e-6 * static_cast<double>(background.ns) *
                                      static_cast<double>(config_.accum_steps) /
                                      static_cast<double>(background.batches);
  }
  outcome_.steps_run = static_cast<std::int64_t>(all_stats_.size());
  outcome_.end = start_ + outcome_.steps_run;
  for (auto& r : reporters_) r->on_end(comm_, outcome_);
}

}  // namespace microddp::run
