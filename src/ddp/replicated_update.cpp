// replicated_update.cpp — clip and step the whole flat buffers; the host view's mirror on a GPU.
#include "ddp/replicated_update.hpp"

#include <limits>

namespace microddp::ddp {

ReplicatedUpdate::ReplicatedUpdate(model::FullMLP& model, kernels::Ops& ops, const model::OptimizerConfig& config)
    : OptimizerUpdate(model, ops, model::make_optimizer(config, model.flat_count(), ops)), gate_(ops, 1) {
  // bf16: the optimizer writes the GEMMs' copy of the weights as it updates them (one pass, not two).
  optimizer_->set_bf16_copy(model_.bf16_param_copy());
  const std::int64_t n = model_.flat_count();
  host_.params = params_.host();
  host_.param_count = n;
  state_.reserve(device_state_.size());  // no reallocation: host_ keeps pointers into the mirrors
  for (const model::Optimizer::StateBuffer& b : device_state_) {
    state_.emplace_back(ops, b.data, b.count);
    host_.optimizer.push_back({b.name, state_.back().host(), b.count});
  }
}

void ReplicatedUpdate::grad_sum_squares_to(double* out) {
  ops_.sum_squares_to(model_.grad_data(), model_.flat_count(), out);
}

void ReplicatedUpdate::poison_gradient() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  model_.grad_buffer().from_host(&nan, 0, 1);
}

void ReplicatedUpdate::apply(double clip) {
  // Same gradient bits on every rank => same norm and factor; applied before the update.
  if (clip < 1.0) ops_.scale(model_.grad_data(), static_cast<float>(clip), model_.flat_count());
  optimizer_->step(model_.param_data(), model_.grad_data());
  model_.bf16_params_written();  // after param_data(): the copy is the new weights' rounding
}

void ReplicatedUpdate::apply_gated(const kernels::StepNumerics* numerics, double max_norm) {
  // apply()'s decisions, made on the device from the same numbers: the same bits as apply(clip).
  optimizer_->kernels().update_gate(numerics, max_norm, gate_.data());
  if (max_norm > 0.0) optimizer_->kernels().scale_gated(model_.grad_data(), gate_.data(), model_.flat_count());
  optimizer_->queue_gated_step(model_.param_data(), model_.grad_data(), gate_.data());
  model_.bf16_params_written();  // a skipped step leaves weights and copy as they were: still current
}

void ReplicatedUpdate::state_to_host() const {
  params_to_host();
  for (const kernels::HostMirror<float>& m : state_) m.to_host();
}

void ReplicatedUpdate::state_from_host() {
  model_.params_changed();  // the CPU's view is the live buffer, written through a pointer taken earlier
  params_.from_host();
  for (kernels::HostMirror<float>& m : state_) m.from_host();
}

void ReplicatedUpdate::add_memory(zero::MemoryReport& m) const {
  OptimizerUpdate::add_memory(m);
  for (const kernels::HostMirror<float>& s : state_) m.host_staging += s.staging_bytes();
}

}  // namespace microddp::ddp
