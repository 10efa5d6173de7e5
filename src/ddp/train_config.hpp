// train_config.hpp — the configuration of one training run (ddp::Trainer's, and what checkpoints,
// run records and rank agreement read), on its own so that they need not include the trainer.
//
// Every configuration member is a row of ddp/train_config_fields.hpp (rank agreement, checkpoints,
// metrics), which says which must agree across ranks and which a resume must match.
#pragma once

#include <cstdint>

#include "core/fault_plan.hpp"
#include "ddp/compression/compression_config.hpp"
#include "core/precision.hpp"
#include "ddp/cuda_graph_mode.hpp"
#include "ddp/grad_sync_options.hpp"
#include "ddp/numerics.hpp"
#include "ddp/strategy.hpp"
#include "ddp/zero/shard_plan.hpp"
#include "model/lr_schedule.hpp"
#include "model/optimizer.hpp"
#include "model/param_layout.hpp"

namespace microddp::ddp {

struct TrainConfig {
  model::MlpConfig model;
  model::OptimizerConfig optimizer;
  // --lr-schedule and its settings (model/lr_schedule.hpp): the learning rate of every step. Stored
  // in checkpoints (format version 2); a resume may change it only when asked (--allow-changed).
  model::LrScheduleConfig lr_schedule;
  std::int64_t steps = 300;
  std::int64_t global_batch = 256;
  std::uint64_t seed = 1;
  Strategy strategy = Strategy::Naive;
  GradSyncOptions sync_options;       // bucket sizes (bucketed)
  GradCompressionConfig compression;  // how gradients travel (ddp/compression; default: fp32)
  // Gradient accumulation: micro-steps per optimizer step. Micro-step k of step s uses global
  // samples [(s*K + k)*B, (s*K + k + 1)*B) with B = global_batch, the loss is scaled by 1/(K*B),
  // and gradients are synchronised only in the last micro-step, so K micro-steps equal one step on
  // a global batch of K*B samples.
  std::int64_t accum_steps = 1;
  bool keep_events = false;   // keep every step's events (for traces); otherwise only the last step's
  bool layer_events = false;  // record per-layer forward/backward events
  // Divergence check every N steps (0: only when check_divergence() is called, which `train` does
  // at the end of every run).
  std::int64_t check_every = 100;
  // Desync check (Communicator::check_sync: collective count and fingerprint hash compared across
  // ranks) at the end of setup() and every N steps (0: at setup only).
  std::int64_t sync_check_every = 100;
  NanPolicy on_nan = NanPolicy::Abort;
  float clip_grad_norm = 0.0f;  // 0: no clipping
  // --shard: none = plain DDP; optimizer / gradients = ZeRO-1 / ZeRO-2 (ddp/zero/zero_sync.hpp):
  // shards follow the strategy's buckets (naive and overlap: one per parameter, flat: one bucket).
  zero::ShardMode shard = zero::ShardMode::None;
  // Batches the input pipeline prepares ahead on a loader thread (--prefetch; 0: none, each batch is
  // filled on the step's thread). Not a result-changing setting: both give the same bits
  // (ddp/input_pipeline.hpp, make_input_pipeline says when a run cannot prefetch).
  std::int64_t prefetch = 2;
  // --cuda-graph: replay the steady-state GPU step as one CUDA graph (ddp/step_graph.hpp). Not a
  // result-changing setting (a replay is bitwise the eager step), but ranks agree on it, so every
  // rank issues its collectives from the host, or none does, and the desync check's counts compare.
  CudaGraphMode cuda_graph = CudaGraphMode::Auto;
  // --precision (core/precision.hpp): the arithmetic of the model's GEMMs. Result-changing, so ranks
  // agree on it; not stored, so a resume may change it (the checkpoint holds fp32 master weights and
  // optimizer state in every precision).
  core::Precision precision = core::Precision::Fp32;
  // --simulate-compute-ms: every backward pass also waits this many milliseconds in total, shared
  // among the layers by parameter count, sleeping so that the core is free for communication, as
  // an accelerator computing would leave it (ddp/simulated_compute.hpp; 0: off). Not a
  // result-changing setting (the same bits), but ranks agree on it: a rank that computes faster
  // than the others only waits for them in every collective.
  float simulate_compute_ms = 0.0f;
  // Test hooks at the trainer's fault points (ddp/step_faults.hpp); empty by default.
  core::FaultPlan faults;
};

}  // namespace microddp::ddp
