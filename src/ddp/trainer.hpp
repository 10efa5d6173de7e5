// trainer.hpp — the data-parallel training loop of one rank.
//
// One optimizer step: produce this rank's rows of global batch s (data::Sampler), zero gradients,
// forward, backward (raising grad_ready into the GradSync strategy), strategy.finish() (gradients
// now hold the global-batch gradient), all-reduce the scalar loss for reporting, optimizer step.
// Every phase is recorded in the event log.
//
// Start-up (setup()): ranks exchange a fingerprint of their configuration and refuse to start on
// any mismatch (naming the field, the rank and both values); the model is initialised from the
// seed, rank 0 broadcasts the parameters, and all ranks verify that their parameter checksums agree.
//
// Contract: same config + same strategy + same backend + same world size => bitwise identical
// runs. No allocation inside step() (buffers are sized in the constructor; the event log is
// reserved for one step, or for all steps when keep_events is set).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "core/event_log.hpp"
#include "core/host_buffer.hpp"
#include "data/synthetic_dataset.hpp"
#include "ddp/grad_sync.hpp"
#include "kernels/ops.hpp"
#include "model/mlp.hpp"
#include "model/optimizer.hpp"

namespace microddp::ddp {

struct TrainConfig {
  model::MlpConfig model;
  model::OptimizerConfig optimizer;
  std::int64_t steps = 300;
  std::int64_t global_batch = 256;
  std::uint64_t seed = 1;
  std::string strategy = "naive";
  GradSyncOptions sync_options;  // bucket sizes (bucketed)
  // Gradient accumulation: micro-steps per optimizer step. Micro-step k of step s uses global
  // samples [(s*K + k)*B, (s*K + k + 1)*B) with B = global_batch, the loss is scaled by 1/(K*B),
  // and gradients are synchronised only in the last micro-step, so K micro-steps equal one step on
  // a global batch of K*B samples.
  std::int64_t accum_steps = 1;
  bool keep_events = false;  // keep every step's events (for traces); otherwise only the last step's
  bool layer_events = false; // record per-layer forward/backward events
};

struct StepRecord {
  std::int64_t step = 0;     // 0-based index of the step just taken
  double loss = 0.0;         // global mean loss of this step's global batch (before the update)
};

class Trainer {
 public:
  Trainer(const TrainConfig& config, comm::Communicator& comm, kernels::Ops& ops);

  // Verify configuration across ranks, initialise, broadcast and verify parameters.
  void setup();
  StepRecord step();

  std::int64_t steps_done() const { return steps_done_; }
  const TrainConfig& config() const { return config_; }
  model::FullMLP& model() { return model_; }
  const model::FullMLP& model() const { return model_; }
  GradSync& sync() { return *sync_; }
  // Replaces the strategy between steps (benchmarks compare strategies on one model). Collective
  // in effect: every rank must switch at the same step to the same strategy and options.
  void set_strategy(const std::string& strategy, const GradSyncOptions& options);
  core::EventLog& events() { return events_; }
  const data::Sampler& sampler() const { return sampler_; }

  // ---- checkpoint / data-source hooks (src/io) ----
  model::Optimizer& optimizer() { return *optimizer_; }
  const model::Optimizer& optimizer() const { return *optimizer_; }
  // Global index of the next sample the trainer will read (world-size independent).
  std::int64_t data_position() const { return steps_done_ * config_.accum_steps * config_.global_batch; }
  // Train from `source` instead of the built-in synthetic set (it must outlive the trainer and
  // match the model's in_dim and classes). Call before the first step.
  void set_data_source(const data::DataSource& source);
  const data::DataSource& data_source() const { return *source_; }
  // After a checkpoint was loaded into model().param_data() and optimizer(): continue at
  // `steps_done`; verifies that all ranks hold the same parameters (collective).
  void restore_progress(std::int64_t steps_done);

  // FNV-1a hash of the parameter bytes (equal on all ranks after every step).
  std::uint64_t param_checksum() const;

 private:
  void verify_config_across_ranks();
  void verify_params_across_ranks();
  void layer_event(core::EventKind kind, int layer, bool begin);

  TrainConfig config_;
  comm::Communicator& comm_;
  kernels::Ops& ops_;
  data::SyntheticDataset dataset_;
  const data::DataSource* source_ = &dataset_;  // dataset_ unless set_data_source()
  data::Sampler sampler_;
  model::FullMLP model_;
  std::unique_ptr<model::Optimizer> optimizer_;
  core::EventLog events_;
  std::unique_ptr<GradSync> sync_;
  core::HostBuffer<std::int32_t> labels_;
  core::HostBuffer<double> loss_buf_;  // 1 element, all-reduced for reporting
  std::int64_t steps_done_ = 0;
  std::int64_t current_step_ = 0;
  std::int64_t layer_begin_ns_ = 0;
  model::GradReadyFn grad_ready_hook_;
  model::GradReadyFn no_ready_hook_;  // empty: non-final accumulation micro-steps
  model::LayerHookFn fwd_hook_, bwd_hook_;
};

// 64-bit FNV-1a over raw bytes.
std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t hash = 0xcbf29ce484222325ull);

}  // namespace microddp::ddp
