// make_zero_sync.cpp — see make_zero_sync.hpp.
#include "ddp/zero/make_zero_sync.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "ddp/bucket_planner.hpp"

namespace microddp::ddp::zero {

std::vector<Bucket> buckets_for_strategy(Strategy strategy, const GradSyncOptions& options,
                                         const std::vector<model::ParamInfo>& params) {
  const StrategyRow& row = strategy_row(strategy);
  MDDP_USAGE_CHECK(row.no_shard.empty(),
                   "--strategy " << row.name << " (" << row.no_shard << ") does not shard: leave --shard at none");
  // Shards follow the buckets of the production strategy whose collectives it issues.
  const Strategy as = row.modelled_as;
  if (as == Strategy::Naive || as == Strategy::Overlap) return plan_per_parameter(params);
  if (as == Strategy::Flat) return plan_buckets(params, std::numeric_limits<std::int64_t>::max());
  if (as == Strategy::Bucketed) {
    const BucketCaps caps = bucket_caps(options);
    return plan_buckets(params, caps.cap_bytes, caps.first_cap_bytes);
  }
  MDDP_USAGE_CHECK(false, "--shard: strategy " << row.name << " has no shard plan");
  return {};
}

ShardPlan plan_for_strategy(Strategy strategy, const GradSyncOptions& options,
                            const std::vector<model::ParamInfo>& params, std::int64_t flat_count, int world, int rank) {
  return plan_shards(params, flat_count, buckets_for_strategy(strategy, options, params), world, rank);
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
