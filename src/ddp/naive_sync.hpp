// naive_sync.hpp — `naive` DDP: after backward, one blocking all-reduce (sum) per parameter, in
// gradient-ready order. The course's starting point: correct, simple, and slow (one collective
// latency per parameter, no overlap with backward).
#pragma once

#include "ddp/grad_sync.hpp"

namespace microddp::ddp {

class NaiveSync final : public GradSync {
 public:
  using GradSync::GradSync;
  std::string_view name() const override { return "naive"; }
  void finish() override;
  std::int64_t collectives_per_step() const override { return static_cast<std::int64_t>(params_.size()); }
};

}  // namespace microddp::ddp
