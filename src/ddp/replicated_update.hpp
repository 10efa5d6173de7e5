// replicated_update.hpp — the optimizer update of plain data parallelism: every rank holds the whole
// optimizer state and steps every parameter from the all-reduced flat gradient, in one fused pass
// (Optimizer::step). The ranks stay identical because they apply the same update to the same bits.
//
// Host view: with CpuOps the live buffers; on a GPU a mirror of [parameters | every state buffer]
// that state_to_host() / state_from_host() copy synchronously. The divergence check compares all of
// it (every rank holds the same optimizer state).
#pragma once

#include "ddp/optimizer_update.hpp"

namespace microddp::ddp {

class ReplicatedUpdate final : public OptimizerUpdate, public GatedUpdate {
 public:
  ReplicatedUpdate(model::FullMLP& model, kernels::Ops& ops, const model::OptimizerConfig& config);

  void grad_sum_squares_to(double* out) override;
  void poison_gradient() override;
  void apply(double clip) override;
  GatedUpdate* gated() override { return this; }
  void stage_gated() override { optimizer_->stage_gated_step(); }
  void apply_gated(const kernels::StepNumerics* numerics, double max_norm) override;
  void commit_gated() override { optimizer_->commit_gated_step(); }

  const HostState& host_state() const override { return host_; }
  void state_to_host() const override;
  void state_from_host() override;
  const HostState& checked_state() const override { return host_; }
  void checked_state_to_host() const override { state_to_host(); }

  void add_memory(zero::MemoryReport& m) const override;

 private:
  HostState host_;  // built once: the checks and checkpoints allocate nothing
  std::vector<kernels::HostMirror<float>> state_;  // host views of device_state_, in its order
  kernels::OpsBuffer<kernels::UpdateGate> gate_;  // the gated step's decision (device memory)
};

}  // namespace microddp::ddp
