// memory_report.hpp — bytes per rank by kind of buffer, measured and predicted (docs/zero.md).
//
// Measured: Trainer::memory_report() adds up the sizes of the buffers this rank actually allocated
// (the model's flat parameter and gradient buffers, its activations and workspaces, the optimizer's
// state buffers, the strategy's own buffers, host mirrors). Predicted: predict_memory() is the
// formula, per element of the flat buffers, with the shard sizes of the exact shard plan at that
// world size (shard_plan.hpp), so a prediction for the running world size equals the measurement.
#pragma once

#include <cstdint>
#include <string>

#include "ddp/zero/shard_plan.hpp"

namespace microddp::ddp::zero {

struct MemoryReport {
  std::int64_t parameters = 0;         // the full flat parameter buffer (every mode)
  std::int64_t gradients = 0;          // backward's flat gradient buffer (0 with a ZeRO-2 gradient pool)
  std::int64_t reduced_gradients = 0;  // --shard gradients: this rank's reduced-gradient shard
  std::int64_t optimizer_state = 0;    // the optimizer's state buffers (a shard when sharded)
  std::int64_t comm_buffers = 0;       // buffers the strategy allocated for its collectives (the ZeRO-2 pool)
  std::int64_t activations = 0;        // activations, upstream-gradient workspaces, loss
  std::int64_t host_staging = 0;       // host mirrors (GPU state copies, sharded checkpoint staging)
  std::int64_t total() const {
    return parameters + gradients + reduced_gradients + optimizer_state + comm_buffers + activations + host_staging;
  }
};

// The formula: 4 bytes per element of the flat buffers for parameters and for backward's gradients;
// optimizer state 4 * state_buffers bytes per element it covers (all flat_count elements when
// mode == None, else the plan's chunk + tail count); --shard gradients adds its reduced-gradient
// shard (same count). grad_pool_count > 0 (--shard gradients without accumulation): backward's
// gradients live in a pool of that many elements (ZeroSync::pool_count: up to two slots of the largest bucket),
// counted as communication buffers, instead of the flat gradient buffer. Host staging and the
// other strategies' communication buffers are not predicted (0).
MemoryReport predict_memory(std::int64_t flat_count, std::int64_t shard_state_count, int state_buffers, ShardMode mode,
                            std::int64_t activation_bytes, std::int64_t grad_pool_count = 0);

// "params 4.00 MiB, grads 4.00 MiB, optimizer 2.00 MiB, ..., total 12.3 MiB"
std::string format_memory(const MemoryReport& m);

}  // namespace microddp::ddp::zero
