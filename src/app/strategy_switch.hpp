// strategy_switch.hpp — benchmarks that compare strategies on one training run (`bench ddp`,
// `analyze`): the run continues under another strategy, bucket plan, shard mode or compression.
//
// A ddp::Trainer runs one configuration; it has no switch. continue_with() moves the run into a new
// Trainer built for `next`: the parameters and the optimizer state through the full host view (what
// a checkpoint holds: one layout for every shard mode and plan, so a change of shard plan needs
// nothing more), the optimizer's step count and the step count. The gradient compressor's state
// (PowerSGD's Q, error feedback) starts fresh, as in a new run. So the training continues exactly:
// N steps, a switch, M steps equal N + M steps under the new configuration's numerics.
// Contract: collective (every rank switches at the same step to the same configuration: the state
// copy all-gathers shards, the new trainer verifies that all ranks hold the same state). The old
// trainer is destroyed before the new one is built: peak memory is one trainer plus the host copy.
// `next` must describe the same model, optimizer, batch and seed; the data is the built-in
// synthetic set (a data source given to the old trainer does not carry over).
#pragma once

#include <memory>

#include "comm/communicator.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"

namespace microddp::app {

std::unique_ptr<ddp::Trainer> continue_with(std::unique_ptr<ddp::Trainer> trainer, const ddp::TrainConfig& next,
                                            comm::Communicator& comm, kernels::Ops& ops);

}  // namespace microddp::app
