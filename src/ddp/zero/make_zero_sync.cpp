// make_zero_sync.cpp — see make_zero_sync.hpp.
#include "ddp/zero/make_zero_sync.hpp"

#include "core/error.hpp"

namespace microddp::ddp::zero {

ShardPlan plan_for_strategy(Strategy strategy, const GradSyncOptions& options,
                            const std::vector<model::ParamInfo>& params, std::int64_t flat_count, int world, int rank) {
  const StrategyRow& row = strategy_row(strategy);
  MDDP_USAGE_CHECK(row.no_shard.empty(),
                   "--strategy " << row.name << " (" << row.no_shard << ") does not shard: leave --shard at none");
  // Shards follow the buckets of the strategy's plan.
  return plan_shards(params, flat_count, strategy_plan(strategy, params, flat_count, options), world, rank);
}

std::unique_ptr<ZeroSync> make_zero_sync(ShardMode mode, Strategy strategy, const GradSyncOptions& options,
                                         comm::Communicator& comm, const std::vector<model::ParamInfo>& params,
                                         core::TensorView grads, core::TensorView param_view, kernels::Ops& ops,
                                         core::EventLog& events, bool grad_pool) {
  ShardPlan plan = plan_for_strategy(strategy, options, params, grads.count, comm.size(), comm.rank());
  return std::make_unique<ZeroSync>(mode, strategy, std::move(plan), comm, params, grads, param_view, ops, events,
                                    grad_pool);
}

}  // namespace microddp::ddp::zero
