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
// Reliability (docs/reliability.md):
//   * Divergence check (ddp/divergence_check.hpp): every check_every steps (inside step()) and
//     whenever check_divergence() is called (`train` calls it at the end), ranks compare bit-exact
//     hashes of every parameter tensor, every optimizer state tensor and the optimizer's step count;
//     any difference: every rank throws core::AgreedError naming the first differing tensor.
//   * Numerics: after gradient synchronisation each rank computes the double sum of squares of the
//     synchronised gradient (finite iff every element is) and flags a non-finite local loss; both
//     flags travel in the loss all-reduce, so every rank sees the same verdict and applies
//     on_nan at the same step: Abort throws core::AgreedError on every rank; Skip leaves
//     parameters and optimizer state (moments, step count) untouched and moves on to the next
//     batch. clip_grad_norm > 0 scales the gradient by min(1, X / (norm + 1e-6)) (PyTorch's
//     clip_grad_norm_) before the optimizer step; the norm is that of the global-batch gradient.
//   * Fault points (test hooks, core/fault_plan.hpp; occurrence = the 1-based step number as
//     printed, so step N is the N-th optimizer step): see trainer_fault_point below.
//
// Devices: the model, gradients and optimizer state live on the Ops's device; the same code runs on
// the CPU, where every queued call below simply runs at once. On a GPU a step that does not check
// divergence makes ONE host synchronisation (docs/gpu.md, "One synchronisation per step"): the batch
// is filled into pinned staging and uploaded asynchronously; each micro-step's loss goes to a device
// float; on a stream-ordered communicator (NCCL) the compute stream, not the host, waits for the
// gradient collectives (GradSync::finish); the gradient's sum of squares and the numerics verdict
// are computed on the device and all-reduced there with the loss; one asynchronous copy brings
// [loss, verdict, sum of squares] to pinned memory, and Ops::synchronize() waits once. The
// optimizer is then queued and the step returns without waiting for it. Phases are timed by device
// marks (Ops::mark, CUDA events on a GPU), resolved at that synchronisation; the optimizer of step s
// is resolved at step s+1's and recorded in step s+1, the interval in which the device ran it. State
// hashes and checkpoints go through a host mirror (state_to_host / state_from_host).
//
// Contract: same config + same strategy + same backend + same world size => bitwise identical
// runs. No allocation inside step() (buffers are sized in the constructor; the event log is
// reserved for one step, or for all steps when keep_events is set).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"
#include "core/event_log.hpp"
#include "core/fault_plan.hpp"
#include "core/host_buffer.hpp"
#include "data/synthetic_dataset.hpp"
#include "ddp/divergence_check.hpp"
#include "ddp/grad_sync.hpp"
#include "ddp/numerics.hpp"
#include "ddp/train_config.hpp"
#include "ddp/train_state.hpp"
#include "ddp/zero/memory_report.hpp"
#include "ddp/zero/shard_plan.hpp"
#include "ddp/zero/zero_sync.hpp"
#include "kernels/ops.hpp"
#include "model/mlp.hpp"
#include "model/optimizer.hpp"

namespace microddp::ddp {

// The trainer's named fault points (armed in TrainConfig::faults by tests, or by `microddp train`
// from MICRODDP_FAULT_NAN / MICRODDP_FAULT_PERTURB, app/fault_env.hpp). Each acts on the armed rank
// only, at the armed step.
namespace trainer_fault_point {
// After the first micro-step's batch is filled: element 0 of this rank's input becomes NaN.
inline constexpr std::string_view kNanInput = "nan_input";
// After gradient synchronisation: element 0 of this rank's gradient becomes NaN (only this rank's
// copy, so only the all-reduced verdict makes the other ranks act).
inline constexpr std::string_view kNanGradient = "nan_gradient";
// After the update, before that step's divergence check: the lowest mantissa bit of element 0 of
// the parameter named by the fault's argument ("layer_01.weight") flips.
inline constexpr std::string_view kPerturbParameter = "perturb_parameter";
}  // namespace trainer_fault_point

struct StepRecord {
  std::int64_t step = 0;   // 0-based index of the step just taken
  double loss = 0.0;       // global mean loss of this step's global batch (before the update)
  double grad_norm = 0.0;  // L2 norm of the synchronised gradient before clipping (NaN/Inf if not finite)
  bool skipped = false;    // non-finite loss/gradient and on_nan == skip: no update was made
};

// The checkpoint's view of the trainer is ddp/train_state.hpp (io/ includes only that).
class Trainer : public TrainState {
 public:
  Trainer(const TrainConfig& config, comm::Communicator& comm, kernels::Ops& ops);
  // Waits for a sharded run's in-flight parameter all-gathers: they write into the model.
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Verify configuration across ranks, initialise, broadcast and verify parameters.
  void setup();
  StepRecord step();

  std::int64_t steps_done() const override { return steps_done_; }
  const TrainConfig& config() const override { return config_; }
  // The model, its parameters those of the last step (a sharded run's in-flight all-gathers are
  // waited for first; see finish_param_gather()).
  model::FullMLP& model() {
    finish_param_gather();
    return model_;
  }
  const model::FullMLP& model() const {
    finish_param_gather();
    return model_;
  }
  GradSync& sync() { return *sync_; }
  const GradSync& sync() const { return *sync_; }
  // Replaces the strategy between steps (benchmarks compare strategies on one model). Collective
  // in effect: every rank must switch at the same step to the same strategy and options.
  // A change of shard mode or of the shard plan moves the optimizer state through a full host copy
  // (collective), so the training continues exactly.
  void set_strategy(Strategy strategy, const GradSyncOptions& options);
  void set_strategy(Strategy strategy, const GradSyncOptions& options, zero::ShardMode shard);
  // Bytes per rank of every buffer this rank allocated, by kind (ddp/zero/memory_report.hpp).
  zero::MemoryReport memory_report() const;
  // The same with another gradient compression (its state starts fresh).
  void set_strategy(Strategy strategy, const GradSyncOptions& options, const GradCompressionConfig& compression);
  // All of it at once: every overload above comes here.
  void set_strategy(Strategy strategy, const GradSyncOptions& options, zero::ShardMode shard,
                    const GradCompressionConfig& compression);
  core::EventLog& events() { return events_; }
  const data::Sampler& sampler() const { return sampler_; }

  // ---- checkpoint / data-source hooks (src/io) ----
  model::Optimizer& optimizer() { return *optimizer_; }
  const model::Optimizer& optimizer() const { return *optimizer_; }
  // Global index of the next sample the trainer will read (world-size independent).
  std::int64_t data_position() const override { return steps_done_ * config_.accum_steps * config_.global_batch; }
  // Train from `source` instead of the built-in synthetic set (it must outlive the trainer and
  // match the model's in_dim and classes). Call before the first step.
  void set_data_source(const data::DataSource& source);
  const data::DataSource& data_source() const override { return *source_; }
  std::int64_t optimizer_steps() const override { return optimizer_->steps_taken(); }
  GradCompressor* compressor() const override { return sync_->compressor(); }
  // After a checkpoint was loaded (host_state() + state_from_host()): continue at `steps_done`;
  // verifies that all ranks hold the same parameters (collective).
  void restore_progress(std::int64_t steps_done);
  void restore_progress(std::int64_t steps_done, std::int64_t optimizer_steps) override;

  // Host view of the parameters and the optimizer state (checkpoints, hashes). With CpuOps these are
  // the live buffers; on a GPU a host mirror: state_to_host() refreshes it from the device,
  // state_from_host() uploads it (both synchronous; no-ops on the CPU). HostState: train_state.hpp.
  // Sharded runs (--shard): the optimizer state of the host view is FULL size (checkpoints stay one
  // format): a host buffer allocated at the first call, filled by state_to_host(), which then is a
  // collective (it all-gathers the shards); state_from_host() takes this rank's shard from it.
  const HostState& host_state() const override;
  void state_to_host() const override;
  void state_from_host() override;

  // FNV-1a hash of the parameter bytes (equal on all ranks after every step). Copies from a GPU.
  std::uint64_t param_checksum() const;

  // Divergence check (collective): throws core::AgreedError on every rank when any parameter or
  // optimizer state differs between ranks. No-op when already checked after this step.
  void check_divergence();
  std::int64_t checks_done() const { return checks_done_; }
  double check_ms_total() const { return check_ms_total_; }  // wall time of all checks (not in the step events)
  // Steps whose update was skipped (on_nan == skip).
  std::int64_t skipped_steps() const { return skipped_steps_; }

 private:
  void verify_config_across_ranks();
  // Builds sync_ (and zero_ when sharded) for the configured strategy and shard mode.
  void build_sync();
  // (Re)builds host_state_, device_state_ and the divergence check over the current optimizer.
  void build_host_state();
  // Sharded: a step ends with the parameter all-gathers in flight (the next forward waits layer by
  // layer, zero_sync.hpp); every other reader of the parameters calls this first.
  void finish_param_gather() const;
  // (Re)builds the forward/backward layer hooks for the current strategy and settings.
  void build_layer_hooks();
  // Forward's host interval as Forward events, minus the all-gather waits inside it (CommWait).
  void record_forward(std::int64_t step, std::int64_t begin_ns, std::int64_t end_ns);
  // Parameters only to the host view (GPU; no-op on the CPU). Not collective.
  void params_to_host() const;
  void update_sharded(double grad_norm);
  double shard_sum_squares() const;
  // Refreshes the host view and runs the divergence check (collective; throws core::AgreedError
  // "ranks diverged <when>[ <step>]: ..." on a difference; step < 0: not printed).
  void verify_state_across_ranks(const char* when, std::int64_t step);
  // The phases of step(), in order.
  void micro_step(std::int64_t step, std::int64_t k, float loss_scale);
  void reduce_loss_and_numerics(std::int64_t micro_steps);
  // A step with a non-finite loss or gradient on some rank: warns (skip) or throws (abort).
  void handle_nonfinite(std::int64_t step, bool loss_bad, bool grad_bad);
  void update(double grad_norm);
  void periodic_checks();
  // The fault armed at `point` for this rank at 0-based step `step` (plans count 1-based), or nullptr.
  const core::ArmedFault* fault_at(std::string_view point, std::int64_t step) const {
    return config_.faults.empty() ? nullptr : config_.faults.fires(point, comm_.rank(), step + 1);
  }
  void flip_parameter_bit(const std::string& name);
  void layer_event(core::EventKind kind, int layer, bool begin);
  // Records the phase events whose device marks the last synchronisation resolved.
  void record_device_phases(std::int64_t step, std::int64_t micro_steps);

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
  zero::ZeroSync* zero_ = nullptr;  // sync_ when sharded, else nullptr
  // Sharded runs: the full optimizer state on the host (checkpoints), allocated at first need.
  mutable core::HostBuffer<float> full_state_mirror_;
  mutable HostState sharded_host_state_;
  bool on_host_ = true;                             // ops_.device() == Host: no staging, no mirror
  kernels::OpsHostBuffer<std::int32_t> labels_;     // host staging (pinned on a GPU): the data source fills it
  kernels::OpsHostBuffer<float> host_input_;        // GPU only: the batch is filled here, then uploaded
  kernels::OpsBuffer<std::int32_t> device_labels_;  // GPU only: labels_ uploaded
  // GPU only: host copies of [params | optimizer state buffers...] (hashes, checkpoints).
  mutable core::HostBuffer<float> host_mirror_;
  // Built once in the constructor (the checks and checkpoints then allocate nothing): the host view
  // (the live buffers with CpuOps, host_mirror_ on a GPU) and the optimizer's device-side buffers.
  HostState host_state_;
  std::vector<model::Optimizer::StateBuffer> device_state_;
  // Device memory: each micro-step's loss share, and the step's numerics: [0..2] all-reduced (sum)
  // once per step = [loss, ranks with a non-finite loss, ranks with a non-finite synchronised
  // gradient] (counts are small integers, exact in double); [3] the gradient's sum of squares;
  // [4..6] this rank's own [loss, loss bad, gradient bad]. host_numerics_ is its pinned host copy.
  kernels::OpsBuffer<float> micro_losses_;
  kernels::OpsBuffer<double> numerics_;
  kernels::OpsHostBuffer<double> host_numerics_;
  // Device marks (Ops::mark) of the phases, resolved at the step's synchronisation.
  struct MicroMarks {
    std::uint32_t forward_begin = 0, forward_end = 0, backward_begin = 0, backward_end = 0;
  };
  std::vector<MicroMarks> micro_marks_;  // one per micro-step, sized once
  std::uint32_t optimizer_marks_[2] = {0, 0};
  bool optimizer_pending_ = false;                // GPU: the last optimizer's marks await the next synchronisation
  core::HostBuffer<std::int64_t> nonfinite_all_;  // (ranks, 2) local flags, gathered only on a non-finite step
  std::unique_ptr<DivergenceCheck> divergence_;   // over host_state_, built once in the constructor
  std::int64_t last_checked_steps_ = -1;
  std::int64_t checks_done_ = 0;
  double check_ms_total_ = 0.0;
  std::int64_t skipped_steps_ = 0;
  std::int64_t steps_done_ = 0;
  std::int64_t current_step_ = 0;
  std::int64_t layer_begin_ns_ = 0;
  model::GradReadyFn grad_ready_hook_;
  model::GradReadyFn no_ready_hook_;  // empty: non-final accumulation micro-steps
  model::LayerHookFn fwd_hook_, bwd_hook_;
};

}  // namespace microddp::ddp
