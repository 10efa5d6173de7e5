// optimizer_update.cpp — what both updates share: the parameters' host view and the memory count.
#include "ddp/optimizer_update.hpp"

#include "core/error.hpp"

namespace microddp::ddp {

OptimizerUpdate::OptimizerUpdate(model::FullMLP& model, kernels::Ops& ops, std::unique_ptr<model::Optimizer> optimizer)
    : model_(model),
      ops_(ops),
      optimizer_(std::move(optimizer)),
      device_state_(optimizer_->state_buffers()),
      on_host_(ops.device() == core::Device::Host) {
  if (on_host_) {
    host_params_ = model_.param_data();  // CpuOps: the live buffer is host memory
  } else {
    params_mirror_.resize(model_.flat_count());
    host_params_ = params_mirror_.data();
  }
}

namespace {
[[noreturn]] void no_gated_step() {
  throw core::Error("this optimizer update has no step decided on the device (only the replicated one has)");
}
}  // namespace

void OptimizerUpdate::stage_gated() { no_gated_step(); }
void OptimizerUpdate::apply_gated(const double* /*numerics*/, double /*max_norm*/) { no_gated_step(); }
void OptimizerUpdate::commit_gated() { no_gated_step(); }

const OptimizerUpdate::Waits& OptimizerUpdate::forward_waits() const {
  static const Waits kNone;  // nothing waits in a replicated forward
  return kNone;
}

const OptimizerUpdate::HostState& OptimizerUpdate::full_size_host_state(HostState& full) const {
  if (full.params == nullptr) {  // first use: the full-size host staging
    const std::int64_t n = model_.flat_count();
    state_mirror_.resize(n * static_cast<std::int64_t>(device_state_.size()));
    full.params = host_params_;
    full.param_count = n;
    for (std::size_t i = 0; i < device_state_.size(); ++i) {
      full.optimizer.push_back({device_state_[i].name, state_mirror_.data() + n * static_cast<std::int64_t>(i), n});
    }
  }
  return full;
}

void OptimizerUpdate::params_to_host() const {
  if (!on_host_) model_.param_buffer().to_host(host_params_, 0, model_.flat_count());
}

void OptimizerUpdate::add_memory(zero::MemoryReport& m) const {
  constexpr std::int64_t kF = sizeof(float);
  for (const auto& b : device_state_) m.optimizer_state += b.count * kF;
  m.host_staging += (params_mirror_.count() + state_mirror_.count()) * kF;
}

}  // namespace microddp::ddp
