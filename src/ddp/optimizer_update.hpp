// optimizer_update.hpp — the optimizer phase of a step and the optimizer state it owns, behind one
// interface, so the step does not ask whether the state is sharded (PyTorch's
// ZeroRedundancyOptimizer wraps an optimizer the same way):
//   ReplicatedUpdate (ddp/replicated_update.hpp)  plain DDP: every rank holds the whole optimizer
//       state and updates every parameter from the all-reduced flat gradient, in one fused pass.
//   ShardedUpdate (ddp/zero/sharded_update.hpp)   ZeRO-1/2: each rank holds the state of its shard
//       only, updates its shard from the reduce-scattered gradient and all-gathers the parameters.
// ddp/sync_and_update.hpp builds the update together with the GradSync that feeds it.
//
// Per step, after GradSync::finish():
//   grad_sum_squares_to(out)  the global gradient's sum of squares, into the numerics verdict
//   apply(clip)               unless the verdict skips the step: scale the gradient by clip (< 1
//                             when clipping bites, the same factor on every rank), step the optimizer
//   end_step()                every step, updated or skipped
// Sharded, the parameters' all-gathers are still in flight when the step returns: the next forward
// waits for them layer by layer (await_layer), every other reader first (finish_param_gather).
//
// Between steps: the host view of parameters and optimizer state (ddp/train_state.hpp says what it
// is), and the part of it the divergence check compares (checked_state(): the optimizer state only
// where every rank holds all of it).
// Contract: the step's calls allocate nothing and do not wait for the device (the sharded sum of
// squares excepted: it is computed per segment on the host); same gradient bits on every rank give
// the same parameters on every rank.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/host_buffer.hpp"
#include "ddp/train_state.hpp"
#include "ddp/zero/memory_report.hpp"
#include "kernels/host_mirror.hpp"
#include "kernels/ops.hpp"
#include "model/mlp.hpp"
#include "model/optimizer.hpp"

namespace microddp::ddp {

// The update decided on the device, in place of OptimizerUpdate::apply() in a step replayed from a
// CUDA graph (Optimizer's gated step says why): stage_gated() before each replay; apply_gated()
// queues the gate from the verdict's all-reduced device numerics (NumericsVerdict::device_numerics),
// the clip scale when max_norm > 0, and the gated optimizer step (recorded once into the graph);
// commit_gated() after the verdict of a step not skipped.
class GatedUpdate {
 public:
  virtual void stage_gated() = 0;
  virtual void apply_gated(const kernels::StepNumerics* numerics, double max_norm) = 0;
  virtual void commit_gated() = 0;

 protected:
  ~GatedUpdate() = default;  // owned as the OptimizerUpdate it is part of
};

class OptimizerUpdate {
 public:
  using HostState = TrainState::HostState;
  // Host intervals [begin, end) in nanoseconds.
  using Waits = std::vector<std::pair<std::int64_t, std::int64_t>>;

  virtual ~OptimizerUpdate() = default;
  OptimizerUpdate(const OptimizerUpdate&) = delete;
  OptimizerUpdate& operator=(const OptimizerUpdate&) = delete;

  model::Optimizer& optimizer() { return *optimizer_; }
  const model::Optimizer& optimizer() const { return *optimizer_; }

  // ---- the step ----
  // The synchronised gradient's sum of squares (double, device memory), global on every rank.
  virtual void grad_sum_squares_to(double* out) = 0;
  // Fault point nan_gradient: element 0 of this rank's synchronised gradient becomes NaN.
  virtual void poison_gradient() = 0;
  virtual void apply(double clip) = 0;
  virtual void end_step() {}

  // ---- the update decided on the device (the optimizer inside the step's CUDA graph) ----
  // The update's GatedUpdate, or nullptr when it has none: only the replicated update has one
  // (graph_obstacle refuses --shard).
  virtual GatedUpdate* gated() { return nullptr; }

  // ---- parameters in flight (sharded) ----
  // Whether the forward must call await_layer() before each layer.
  virtual bool gathers_in_forward() const { return false; }
  virtual void await_layer(int /*layer*/, std::int64_t /*step*/) {}
  // Host intervals await_layer() waited in since clear_forward_waits() (the step's timing cuts them
  // out of the Forward events; they are CommWait events of their own).
  virtual const Waits& forward_waits() const;
  virtual void clear_forward_waits() {}
  // Waits for every all-gather still in flight (events recorded under `step`).
  virtual void finish_param_gather(std::int64_t /*step*/) const {}

  // ---- host view (call finish_param_gather() first) ----
  virtual const HostState& host_state() const = 0;
  virtual void state_to_host() const = 0;
  virtual void state_from_host() = 0;
  // Parameters only (GPU: the mirror; no-op on the CPU). Not collective.
  void params_to_host() const;
  virtual const HostState& checked_state() const = 0;
  virtual void checked_state_to_host() const = 0;

  // Adds what this update allocated: optimizer state, host mirrors (and the sharded sync's buffers).
  virtual void add_memory(zero::MemoryReport& m) const;

 protected:
  OptimizerUpdate(model::FullMLP& model, kernels::Ops& ops, std::unique_ptr<model::Optimizer> optimizer);
  // A sharded update's host view: the parameters and a full-size (flat_count) copy of each optimizer
  // state buffer in full_state_, laid out into `full` on first use (state_to_host() fills it).
  const HostState& full_size_host_state(HostState& full) const;

  model::FullMLP& model_;
  kernels::Ops& ops_;
  std::unique_ptr<model::Optimizer> optimizer_;
  std::vector<model::Optimizer::StateBuffer> device_state_;  // the optimizer's buffers (device memory)
  // The parameters' host view: the live buffer with CpuOps, a copy on a GPU.
  mutable kernels::HostMirror<float> params_;
  // The sharded update's full-size optimizer state on the host (full_size_host_state), counted in
  // add_memory().
  mutable core::HostBuffer<float> full_state_;
};

}  // namespace microddp::ddp
