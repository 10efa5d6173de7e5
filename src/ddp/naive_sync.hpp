// naive_sync.hpp — `naive` DDP: after backward, one blocking all-reduce (sum) per parameter, in
// gradient-ready order. The course's starting point: correct, simple, and slow (one collective
// latency per parameter, no overlap with backward).
#pragma once

#include "ddp/grad_sync.hpp"

namespace microddp::ddp {

class NaiveSync final : public GradSync {
 public:
  NaiveSync(comm::Communicator& comm, const std::vector<model::ParamInfo>& params, core::TensorView grads,
            core::EventLog& events)
      : GradSync(comm, params, grads, events) {
    synced_count_ = 0;  // one all-reduce per parameter: the padding between them is not sent
    for (const auto& p : params) synced_count_ += p.count;
  }
  Strategy strategy() const override { return Strategy::Naive; }
  void finish() override;
  std::int64_t collectives_per_step() const override { return static_cast<std::int64_t>(params_.size()); }
  std::vector<SyncUnit> units() const override;
};

}  // namespace microddp::ddp
