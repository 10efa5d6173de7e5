// replicated_update.cpp — clip and step the whole flat buffers; the host view's mirror on a GPU.
#include "ddp/replicated_update.hpp"

#include <limits>

namespace microddp::ddp {

ReplicatedUpdate::ReplicatedUpdate(model::FullMLP& model, kernels::Ops& ops, const model::OptimizerConfig& config)
    : OptimizerUpdate(model, ops, model::make_optimizer(config, model.flat_count(), ops)), gate_(ops, 1) {
  const std::int64_t n = model_.flat_count();
  host_.params = host_params_;
  host_.param_count = n;
  if (on_host_) {
    host_.optimizer = device_state_;  // CpuOps: the live buffers are host memory
    return;
  }
  state_mirror_.resize(n * static_cast<std::int64_t>(device_state_.size()));
  for (std::size_t i = 0; i < device_state_.size(); ++i) {
    host_.optimizer.push_back(
        {device_state_[i].name, state_mirror_.data() + n * static_cast<std::int64_t>(i), device_state_[i].count});
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
}

void ReplicatedUpdate::apply_gated(const double* numerics, double max_norm) {
  // apply()'s decisions, made on the device from the same numbers: the same bits as apply(clip).
  ops_.update_gate(numerics, max_norm, gate_.data());
  if (max_norm > 0.0) ops_.scale_gated(model_.grad_data(), gate_.data(), model_.flat_count());
  optimizer_->queue_gated_step(model_.param_data(), model_.grad_data(), gate_.data());
}

void ReplicatedUpdate::state_to_host() const {
  params_to_host();
  for (std::size_t i = 0; !on_host_ && i < device_state_.size(); ++i) {
    ops_.copy_to_host(host_.optimizer[i].data, device_state_[i].data,
                      static_cast<std::size_t>(device_state_[i].count) * sizeof(float));
  }
}

void ReplicatedUpdate::state_from_host() {
  if (on_host_) return;  // the view is the live buffers
  model_.param_buffer().from_host(host_.params, 0, model_.flat_count());
  for (std::size_t i = 0; i < device_state_.size(); ++i) {
    ops_.copy_from_host(device_state_[i].data, host_.optimizer[i].data,
                        static_cast<std::size_t>(device_state_[i].count) * sizeof(float));
  }
}

}  // namespace microddp::ddp
