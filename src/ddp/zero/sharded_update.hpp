// sharded_update.hpp — the optimizer update of ZeRO-1/2 (--shard optimizer | gradients): each rank
// holds the optimizer state of its shard only (shard_plan.hpp: its chunk of every bucket, plus the
// small tails every rank updates), steps it from the reduce-scattered gradient and all-gathers the
// updated parameters (zero_sync.hpp has the collectives).
//
// The step:
//   grad_sum_squares_to  the global sum of squares is the sum of the shards' (the replicated tails
//                        counted on rank 0 only): one more small all-reduce, on the host's sum
//   apply(clip)          scale the shard by the global factor; then bucket by bucket, LAST bucket
//                        first (it holds layer 0, which the next forward needs first): update the
//                        bucket's segments and start its all-gather while the next bucket updates
//   end_step             ZeroSync::end_step (ZeRO-1: zero the in-place reduce-scatter's results)
// The step ends with the all-gathers in flight; the next forward waits layer by layer
// (await_layer), every other reader of the parameters first (finish_param_gather).
//
// Host view: the optimizer state of host_state() is FULL size (checkpoints keep one format): a host
// buffer allocated at the first call. state_to_host() assembles it (collective: one all-gather per
// bucket, the tails from this rank's copy), so every rank ends with the full state (the parallel
// HDF5 writer needs it on every rank, the serial one on rank 0; an all-gather costs what a gather
// to one rank costs on a ring). state_from_host() takes this rank's chunks and the tails from it.
// The divergence check compares the parameters only: each rank's optimizer state is its own shard.
#pragma once

#include <memory>

#include "ddp/optimizer_update.hpp"
#include "ddp/train_config.hpp"
#include "ddp/zero/zero_sync.hpp"

namespace microddp::ddp::zero {

class ShardedUpdate final : public OptimizerUpdate {
 public:
  // `sync` is the ZeroSync feeding this update over `comm` (both must outlive it); the optimizer is
  // built over its plan's shard.
  ShardedUpdate(model::FullMLP& model, kernels::Ops& ops, const model::OptimizerConfig& config,
                comm::Communicator& comm, ZeroSync& sync);

  void grad_sum_squares_to(double* out) override;
  void poison_gradient() override;
  void apply(double clip) override;
  void end_step() override { sync_.end_step(ops_); }

  bool gathers_in_forward() const override { return true; }
  void await_layer(int layer, std::int64_t step) override { sync_.await_layer(layer, step); }
  const Waits& forward_waits() const override { return sync_.forward_waits(); }
  void clear_forward_waits() override { sync_.clear_forward_waits(); }
  void finish_param_gather(std::int64_t step) const override;

  const HostState& host_state() const override;
  void state_to_host() const override;
  void state_from_host() override;
  const HostState& checked_state() const override { return params_only_; }
  void checked_state_to_host() const override { params_to_host(); }

  void add_memory(MemoryReport& m) const override;

 private:
  comm::Communicator& comm_;
  ZeroSync& sync_;
  HostState params_only_;   // the divergence check's view
  mutable HostState full_;  // host_state(): params + full-size optimizer state (full_state_)
};

// The ZeroSync and ShardedUpdate of a sharded configuration (config.shard != None), the sync ready
// for the step: under --shard gradients without accumulation it is the model's GradPlacement (the
// gradient pool), so the model's flat gradient buffer is freed. Compressed gradients are refused
// (core::UsageError): the sharded sync reduce-scatters fp32 buckets.
struct ShardedParts {
  std::unique_ptr<ZeroSync> sync;
  std::unique_ptr<ShardedUpdate> update;
};
ShardedParts make_sharded(const TrainConfig& config, comm::Communicator& comm, model::FullMLP& model, kernels::Ops& ops,
                          core::EventLog& events);

}  // namespace microddp::ddp::zero
