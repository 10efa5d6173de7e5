// make_zero_sync.hpp — the shard plan of a strategy, and the ZeroSync for it.
//
// Shards follow the buckets of the strategy's plan (its row, ddp/strategy.hpp; shard_plan.hpp).
#pragma once

#include <memory>
#include <string>

#include "ddp/grad_sync.hpp"
#include "ddp/zero/zero_sync.hpp"

namespace microddp::ddp::zero {

ShardPlan plan_for_strategy(Strategy strategy, const GradSyncOptions& options,
                            const std::vector<model::ParamInfo>& params, std::int64_t flat_count, int world, int rank);

// Whether ZeRO backward writes into ZeroSync's bucket pool instead of the flat gradient buffer:
// under --shard gradients with one micro-step per step (with accumulation the micro-steps sum into
// the flat buffer: a pool would need a reduce-scatter per micro-step, docs/zero.md).
inline bool uses_grad_pool(ShardMode mode, std::int64_t accum_steps) {
  return mode == ShardMode::Gradients && accum_steps == 1;
}

std::unique_ptr<ZeroSync> make_zero_sync(ShardMode mode, Strategy strategy, const GradSyncOptions& options,
                                         comm::Communicator& comm, const std::vector<model::ParamInfo>& params,
                                         core::TensorView grads, core::TensorView param_view, kernels::Ops& ops,
                                         core::EventLog& events, bool grad_pool = false);

}  // namespace microddp::ddp::zero
