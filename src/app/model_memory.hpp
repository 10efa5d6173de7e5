// model_memory.hpp — how much host memory one rank's model needs at least, checked against what
// this rank may allocate (core/memory_limit.hpp) before the Trainer allocates anything, so that
// `train --width 100000` is one sentence with both numbers (exit 2) rather than a failed
// allocation deep inside the model.
//
// The estimate is a lower bound, so it never refuses a run that would fit: the flat parameter
// buffer, backward's gradients (a shard of them under --shard gradients), the optimizer's state
// buffers (a 1/ranks share under --shard), the activations and workspaces of one micro-batch of
// ceil(global batch / ranks) rows (the model's own allocations, model/mlp.cpp), and the input
// batches the pipeline holds (the current one and --prefetch ahead). Communication buffers, host
// mirrors and the libraries' own memory are left out. Computed in double: at the largest widths
// and depths the options accept the byte counts pass 2^63.
#pragma once

#include <cstdint>
#include <string>

#include "core/memory_limit.hpp"
#include "ddp/train_config.hpp"

namespace microddp::app {

struct ModelMemory {
  double parameters = 0, gradients = 0, optimizer_state = 0, activations = 0, input_batches = 0;  // bytes
  std::int64_t rows = 0;  // rows of one micro-batch on this rank
  double total() const { return parameters + gradients + optimizer_state + activations + input_batches; }
};

// FullMLP's activations, workspaces and loss buffer for `rows` rows (model/mlp.cpp's allocations).
double activation_bytes(const model::MlpConfig& c, std::int64_t rows);

ModelMemory estimate_model_memory(const ddp::TrainConfig& cfg, int ranks);

// "" when the estimate fits `budget` (or no limit is known); else the sentence of the refusal.
// `replicas`: models this process holds (manual holds its two replicas, each a rank of `ranks`).
std::string model_memory_refusal(const ddp::TrainConfig& cfg, int ranks, const core::MemoryBudget& budget,
                                 int replicas = 1);

// The single-process commands (baseline, manual): a core::UsageError with the refusal, against this
// process's own limits.
void require_model_memory(const ddp::TrainConfig& cfg, int ranks, int replicas);

}  // namespace microddp::app
