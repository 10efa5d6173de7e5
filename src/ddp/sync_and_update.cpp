// sync_and_update.cpp — the replicated or the sharded pair.
#include "ddp/sync_and_update.hpp"

#include "ddp/replicated_update.hpp"
#include "ddp/strategy.hpp"
#include "ddp/zero/sharded_update.hpp"

namespace microddp::ddp {

SyncAndUpdate make_sync_and_update(const TrainConfig& config, comm::Communicator& comm, model::FullMLP& model,
                                   kernels::Ops& ops, core::EventLog& events) {
  SyncAndUpdate parts;
  if (config.shard == zero::ShardMode::None) {
    parts.sync = make_grad_sync(config.strategy, comm, model.params(), model.grad_view(), events, config.sync_options,
                                config.compression, ops, config.seed);
    // A row may bring its own update (a course lab that shards the optimizer state itself).
    const UpdateMaker make_update = strategy_row(config.strategy).make_update;
    parts.update = make_update != nullptr ? make_update(*parts.sync, model, ops, config.optimizer, comm)
                                          : std::make_unique<ReplicatedUpdate>(model, ops, config.optimizer);
    return parts;
  }
  zero::ShardedParts sharded = zero::make_sharded(config, comm, model, ops, events);
  parts.sync = std::move(sharded.sync);
  parts.update = std::move(sharded.update);
  return parts;
}

}  // namespace microddp::ddp
