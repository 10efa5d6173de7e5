// zero_forecast.hpp — `analyze`'s sharding section: bytes per rank and step time of each --shard
// mode at other world sizes, and which fit --memory-limit (docs/zero.md).
//
// Memory: ddp::zero::predict_memory with the exact shard plan at each world size (the same
// function the trainer's measured report is checked against in tests/ddp/test_zero.cpp), and the
// activations of ceil(global batch / ranks) rows. Step time: the analysis' predicted strong-scaling
// step of plain DDP at that world size (same communication volume: reduce-scatter + all-gather is
// one all-reduce), less the (1 - 1/ranks) of the measured optimizer time a rank no longer spends
// (it updates only its shard), plus the all-gather, which runs after the update and so is exposed:
// half the predicted exposed communication of DDP at that size, which is an upper bound when the
// all-gather overlaps the shard update (zero_sync.hpp).
#pragma once

#include <string>

#include "ddp/train_config.hpp"
#include "perf/analysis.hpp"

namespace microddp::app {

// `analysis`: perf::analyze's result (its strong-scaling points and the measured breakdown);
// memory_limit_mib <= 0: no limit. Returns the printed table.
std::string zero_forecast(const ddp::TrainConfig& cfg, double bucket_mb, const perf::Analysis& analysis,
                          double memory_limit_mib, int max_ranks);

}  // namespace microddp::app
