// sync_and_update.hpp — which gradient synchronisation and which optimizer update a configuration
// runs, built together (they must match: a sharded update steps the shards its ZeroSync reduces).
//
//   --shard none                   the strategy's GradSync (with its gradient compressor, if any)
//                                  and a ReplicatedUpdate (ddp/replicated_update.hpp), or the
//                                  update its row makes (StrategyRow::make_update, ddp/strategy.hpp)
//   --shard optimizer | gradients  a ZeroSync over the strategy's buckets and a ShardedUpdate
//                                  (ddp/zero/sharded_update.hpp)
// Contract: the sync is ready for the step (a ZeRO-2 gradient pool is already the model's gradient
// placement); every rank builds the same pair from the same configuration. Invalid combinations
// are core::UsageError (e.g. --shard with --grad-compression).
#pragma once

#include <memory>

#include "comm/communicator.hpp"
#include "core/event_log.hpp"
#include "ddp/grad_sync.hpp"
#include "ddp/optimizer_update.hpp"
#include "ddp/train_config.hpp"
#include "kernels/ops.hpp"
#include "model/mlp.hpp"

namespace microddp::ddp {

struct SyncAndUpdate {
  std::unique_ptr<GradSync> sync;
  std::unique_ptr<OptimizerUpdate> update;  // reads the sync's buffers: destroy it first
};

SyncAndUpdate make_sync_and_update(const TrainConfig& config, comm::Communicator& comm, model::FullMLP& model,
                                   kernels::Ops& ops, core::EventLog& events);

}  // namespace microddp::ddp
