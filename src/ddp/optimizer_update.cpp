// optimizer_update.cpp — what both updates share: the parameters' host view and the memory count.
#include "ddp/optimizer_update.hpp"

#include <utility>

#include "core/error.hpp"

namespace microddp::ddp {

OptimizerUpdate::OptimizerUpdate(model::FullMLP& model, kernels::Ops& ops, std::unique_ptr<model::Optimizer> optimizer)
    : model_(model),
      ops_(ops),
      optimizer_(std::move(optimizer)),
      device_state_(optimizer_->state_buffers()),
      // The read-only accessor: taking the mirror's pointer changes no weight (the mutable one would
      // mark the bf16 copy stale); state_from_host() says when they change.
      params_(ops, const_cast<float*>(std::as_const(model_).param_data()), model_.flat_count()) {}

const OptimizerUpdate::Waits& OptimizerUpdate::forward_waits() const {
  static const Waits kNone;  // nothing waits in a replicated forward
  return kNone;
}

const OptimizerUpdate::HostState& OptimizerUpdate::full_size_host_state(HostState& full) const {
  if (full.params == nullptr) {  // first use: the full-size host staging
    const std::int64_t n = model_.flat_count();
    full_state_.resize(n * static_cast<std::int64_t>(device_state_.size()));
    full.params = params_.host();
    full.param_count = n;
    for (std::size_t i = 0; i < device_state_.size(); ++i) {
      full.optimizer.push_back({device_state_[i].name, full_state_.data() + n * static_cast<std::int64_t>(i), n});
    }
  }
  return full;
}

void OptimizerUpdate::params_to_host() const { params_.to_host(); }

void OptimizerUpdate::add_memory(zero::MemoryReport& m) const {
  constexpr std::int64_t kF = sizeof(float);
  for (const auto& b : device_state_) m.optimizer_state += b.count * kF;
  m.host_staging += params_.staging_bytes() + full_state_.count() * kF;
}

}  // namespace microddp::ddp
