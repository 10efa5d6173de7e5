// flat_sync.hpp — `flat` DDP: after backward, ONE blocking all-reduce (sum) over the whole flat
// gradient buffer. Because all gradients live in one contiguous buffer (model/mlp.hpp), this needs
// no packing copy. It pays one collective latency instead of one per parameter, and moves the
// bytes at the large-message bandwidth — but nothing overlaps with backward.
#pragma once

#include "ddp/grad_sync.hpp"

namespace microddp::ddp {

class FlatSync final : public GradSync {
 public:
  using GradSync::GradSync;
  Strategy strategy() const override { return Strategy::Flat; }
  void finish() override;
  std::int64_t collectives_per_step() const override { return 1; }
  std::string collective_label(int) const override { return "all gradients"; }
  std::vector<SyncUnit> units() const override {
    return {SyncUnit{0, total_count_, 0, static_cast<int>(params_.size())}};
  }
};

}  // namespace microddp::ddp
