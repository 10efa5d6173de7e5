// trainer.hpp — the data-parallel training loop of one rank, composed of its parts.
//
// One optimizer step, in the order step() runs it (docs/design.md, "The training step's parts"):
//   for each micro-step:  data      InputPipeline::load (ddp/input_pipeline.hpp)
//                         forward   model::FullMLP (a sharded run first waits for its parameters)
//                         backward  each finished gradient raises grad_ready into the GradSync
//                                   (ddp/grad_sync.hpp; only in the last micro-step)
//   GradSync::finish()    gradients now hold the global-batch gradient (or this rank's shard of it)
//   numerics verdict      loss, non-finite flags and the gradient's sum of squares all-reduced
//                         together: the step's one host synchronisation (ddp/numerics_verdict.hpp)
//   (--simulate-compute-ms: each layer's backward first sleeps its share, ddp/simulated_compute.hpp)
//   learning rate         the schedule's rate of this step, handed to the optimizer before the phases
//                         (model/lr_schedule.hpp; a skipped step advances the schedule too)
//   optimizer update      replicated or sharded (ddp/optimizer_update.hpp), unless the verdict skips
//   checks                fault points (ddp/step_faults.hpp), desync and divergence checks
//                         (ddp/divergence_check.hpp) every N steps
// Every phase is recorded in the event log (ddp/step_timing.hpp for the compute phases).
//
// Start-up (setup()): ranks compare their configurations (ddp/config_agreement.hpp); the model is
// initialised from the seed, rank 0 broadcasts the parameters, and all ranks verify that they agree.
//
// Devices: the model, gradients and optimizer state live on the Ops's device; the same code runs on
// the CPU, where every queued call simply runs at once. On a GPU a step that does not check
// divergence makes ONE host synchronisation (docs/gpu.md, "One synchronisation per step"): the
// numerics verdict's. The optimizer is then queued and the step returns without waiting for it.
//
// Contract: same config + same strategy + same backend + same world size => bitwise identical
// runs. No allocation inside step() (buffers are sized in the constructor; the event log is
// reserved for one step, or for all steps when keep_events is set). A Trainer runs one
// configuration: benchmarks that compare strategies build a new one (app/strategy_switch.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "core/event_log.hpp"
#include "ddp/trainer_data_lease.hpp"
#include "ddp/divergence_check.hpp"
#include "ddp/grad_sync.hpp"
#include "ddp/input_pipeline.hpp"
#include "ddp/numerics_verdict.hpp"
#include "ddp/simulated_compute.hpp"
#include "ddp/optimizer_update.hpp"
#include "ddp/step_faults.hpp"
#include "ddp/step_graph.hpp"
#include "ddp/step_timing.hpp"
#include "ddp/train_config.hpp"
#include "ddp/train_state.hpp"
#include "ddp/zero/memory_report.hpp"
#include "kernels/ops.hpp"
#include "model/lr_schedule.hpp"
#include "model/mlp.hpp"

namespace microddp::ddp {

struct StepRecord {
  std::int64_t step = 0;   // 0-based index of the step just taken
  double loss = 0.0;       // global mean loss of this step's global batch (before the update)
  double grad_norm = 0.0;  // L2 norm of the synchronised gradient before clipping (NaN/Inf if not finite)
  float lr = 0.0f;         // the learning rate of this step (model/lr_schedule.hpp)
  bool skipped = false;    // non-finite loss/gradient and on_nan == skip: no update was made
};

class Trainer final : public TrainState {
 public:
  Trainer(const TrainConfig& config, comm::Communicator& comm, kernels::Ops& ops);
  // Waits for a sharded run's in-flight parameter all-gathers: they write into the model.
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Verify configuration across ranks, initialise, broadcast and verify parameters.
  void setup();
  StepRecord step();

  // The model, its parameters those of the last step (a sharded run's in-flight all-gathers are
  // waited for first).
  model::FullMLP& model();
  const model::FullMLP& model() const;
  GradSync& sync() { return *sync_; }
  const GradSync& sync() const { return *sync_; }
  model::Optimizer& optimizer() { return update_->optimizer(); }
  const model::Optimizer& optimizer() const { return update_->optimizer(); }
  core::EventLog& events() { return events_; }
  const data::Sampler& sampler() const { return input_->sampler(); }
  // Bytes per rank of every buffer this rank allocated, by kind (ddp/zero/memory_report.hpp).
  zero::MemoryReport memory_report() const;
  // Train from `source` instead of the built-in synthetic set (InputPipeline::set_source), before
  // the first step. The input pipeline is chosen anew for it (make_input_pipeline). The trainer
  // borrows `source` until the returned lease ends (ddp/trainer_data_lease.hpp): declare the lease
  // after the source, so that every read of it (a prefetching loader's too) stops first.
  DataSourceLease set_data_source(const data::DataSource& source);
  // What the lease's end calls: stops every read of the borrowed source (a prefetching loader is
  // joined after the fill in progress); step() refuses to run until set_data_source again.
  // Does not throw (a failure to stop is reported as a warning: it runs during unwinding).
  void release_data_source() noexcept;
  // How the input is prepared ("prefetch 2", or why not) and its background work (the run summary).
  const std::string& input_note() const { return input_note_; }
  BackgroundWork input_background() const { return input_->background(); }
  // Read the data source in epochs (InputPipeline::set_epochs), after set_data_source().
  void set_epochs(const data::EpochSampler& epochs) { input_->set_epochs(epochs, config_.accum_steps); }

  // ---- TrainState: what checkpoints save and restore (ddp/train_state.hpp) ----
  const TrainConfig& config() const override { return config_; }
  std::int64_t steps_done() const override { return steps_done_; }
  std::int64_t data_position() const override { return steps_done_ * config_.accum_steps * config_.global_batch; }
  const data::DataSource& data_source() const override { return input_->source(); }
  std::string data_description() const override { return input_->describe(); }
  std::int64_t optimizer_steps() const override { return optimizer().steps_taken(); }
  GradCompressor* compressor() const override { return sync_->compressor(); }
  const HostState& host_state() const override;
  void state_to_host() const override;
  void state_from_host() override;
  void restore_progress(std::int64_t steps_done, std::int64_t optimizer_steps) override;
  // Continue at `steps_done` (the optimizer's step count as it is); collective (see TrainState).
  void restore_progress(std::int64_t steps_done);

  // FNV-1a hash of the parameter bytes (equal on all ranks after every step). Copies from a GPU.
  std::uint64_t param_checksum() const;
  // Divergence check (collective): throws core::AgreedError on every rank when any parameter or
  // optimizer state differs between ranks. No-op when already checked after this step.
  void check_divergence();
  std::int64_t checks_done() const { return divergence_->checks_done(); }
  double check_ms_total() const { return divergence_->check_ms_total(); }  // not in the step events
  std::int64_t skipped_steps() const { return verdict_.skipped_steps(); }  // updates skipped (on_nan skip)
  // The step's CUDA graph (--cuda-graph): whether it is on, and why not (ddp/step_graph.hpp).
  const StepGraph& step_graph() const { return *graph_; }
  // The learning rate of every step (--lr-schedule); the optimizer gets lr(step) before each step.
  const model::LrSchedule& lr_schedule() const { return schedule_; }

 private:
  // input_ and input_note_ for `source` (nullptr: the synthetic set).
  void choose_input(const data::DataSource* source);
  // The phases of step() that are more than a call.
  void micro_step(std::int64_t step, std::int64_t k, float loss_scale) {
    load_batch(step, k);
    forward_backward(step, k, loss_scale);
  }
  void load_batch(std::int64_t step, std::int64_t k);
  // The update's GatedUpdate (a graphed step; graph_obstacle made sure there is one).
  GatedUpdate& gated_update();
  // The host's decisions a CUDA graph's capture bakes in (StepGraph::stale compares them).
  std::uint64_t capture_key() const;
  void forward_backward(std::int64_t step, std::int64_t k, float loss_scale);
  // The eager step's phases 1-3 (see step()), or the same as a replay of the step graph.
  void eager_phases(std::int64_t step, float loss_scale);
  void graphed_phases(std::int64_t step, float loss_scale);
  void update(double grad_norm);
  void periodic_checks();
  // Sharded: a step ends with the parameter all-gathers in flight; every reader of the parameters
  // outside the forward waits here first.
  void finish_param_gather() const { update_->finish_param_gather(current_step_); }
  // Refreshes the compared host view and runs the divergence check (collective; throws
  // core::AgreedError "ranks diverged <when>[ <step>]: ..." on a difference; step < 0: not printed).
  void verify_state_across_ranks(const char* when, std::int64_t step);
  void layer_event(core::EventKind kind, int layer, bool begin);

  TrainConfig config_;
  comm::Communicator& comm_;
  kernels::Ops& ops_;
  model::FullMLP model_;
  model::LrSchedule schedule_;
  std::unique_ptr<InputPipeline> input_;
  std::string input_note_;  // make_input_pipeline's note
  bool source_released_ = false;  // release_data_source() since the last set_data_source()
  core::EventLog events_;
  std::unique_ptr<GradSync> sync_;
  std::unique_ptr<OptimizerUpdate> update_;  // after sync_: a sharded update reads its buffers
  NumericsVerdict verdict_;
  StepTiming timing_;
  StepFaults faults_;
  SimulatedCompute simulated_;  // --simulate-compute-ms: the emulated device's backward
  std::unique_ptr<DivergenceCheck> divergence_;  // over update_->checked_state(), built once
  std::unique_ptr<StepGraph> graph_;             // decided in the constructor
  std::int64_t steps_run_ = 0;                   // steps this object ran (a resumed run starts at 0)
  std::int64_t steps_done_ = 0;
  std::int64_t current_step_ = 0;
  std::int64_t layer_begin_ns_ = 0;
  // Built in the constructor: constructing std::function objects inside step() could allocate.
  model::GradReadyFn grad_ready_hook_;
  model::GradReadyFn no_ready_hook_;  // empty: non-final accumulation micro-steps
  model::LayerHookFn fwd_hook_, bwd_hook_;
};

}  // namespace microddp::ddp
