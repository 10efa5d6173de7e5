// step_graph.hpp — the steady-state GPU training step replayed as one CUDA graph.
//
// Why: a GPU step of the default model is ~100 small kernels (16 layers x forward, backward, bias and
// activation kernels) plus the gradient collectives and the numerics, each launched from the host at a
// few microseconds apiece; the GPU finishes them faster than the host issues them (launch-bound).
// A CUDA graph records those calls once and replays them with one launch.
//
// What is captured (one graph per trainer, recorded by its second step, the first one warms up every
// lazy allocation: cuBLAS, NCCL, the communicator's buffers):
//   forward, backward with its gradient-ready hooks (their asynchronous collectives on a stream-ordered
//   communicator become graph nodes: the communication stream is forked into the capture and joined
//   back through events), GradSync::finish, the gradient's sum of squares, the numerics verdict's
//   all-reduce and copy to pinned host memory (NumericsVerdict::queue_reduce), and the optimizer:
//   its decisions (skip a non-finite step, the clip factor) are made on the device from the verdict's
//   all-reduced numbers, and its per-step scalars (Adam's bias corrections) are staged by the host
//   before each replay and copied in by it (OptimizerUpdate::apply_gated, Optimizer's gated step).
// What stays outside, every step:
//   the batch's upload (InputPipeline::load, before the replay: the graph reads the model's input
//   buffer, whose address is fixed), the host synchronisation and the verdict's policy (wait_reduce,
//   enforce: abort or count a skipped step; the host then counts the optimizer step), and the
//   periodic checks. A graphed step is one replay and one synchronisation.
// A replay is bitwise the eager step: the same kernels on the same buffers in the same order
// (tests/ddp: eager and graphed runs compared bit for bit on the emulated device).
//
// Decisions made at capture: the host code that ran during the capture decided what the graph does
// (e.g. the bf16 forward skips rounding the weights when the optimizer's pass already wrote the copy).
// The trainer sums them up in a key; when a later change would make the host decide differently (the
// weights changed from the host, so the copy is stale), the graph is captured again before the next
// replay. Memory a captured collective used stays allocated for the replays (nccl_backend.hpp).
// Eligibility (graph_obstacle) is asked of each part the run is made of, each answering for itself:
// the compute (Ops::supports_graphs: a GPU), the communicator (stream-ordered, nccl and nccl-ring:
// host-driven backends wait on the host inside the step; and a library that can be captured, NCCL
// 2.9.6 or later: Communicator::capture_obstacle), the strategy's row (StrategyRow::graph_obstacle:
// a lab row runs its student's host code), the compression mode's row
// (CompressionModeRow::graph_obstacle: a compressor's second phase is host-driven) and the shard mode
// (zero::shard_graph_obstacle: parameter gathers are waited by the next forward); then the run's own
// settings: one micro-step per step, no per-layer events (host clocks between layers), no
// --debug-sync (an MPI exchange before each collective) and no armed fault points (they count host
// calls). A new strategy or mode says in its row whether a replay can run it. What a replay does not do: record the per-collective
// events (launch and completion of each all-reduce): the step, forward and backward times stay
// (their device marks are part of the graph), the breakdown's communication columns read 0; use
// --cuda-graph off to time the collectives.
#pragma once

#include <cstdint>
#include <string>

#include "comm/communicator.hpp"
#include "ddp/cuda_graph_mode.hpp"
#include "ddp/train_config.hpp"
#include "kernels/ops.hpp"

namespace microddp::ddp {

// Why this run's step cannot be captured, in a few words for the run header and the usage error of
// --cuda-graph on; empty when it can.
std::string graph_obstacle(const TrainConfig& config, const kernels::Ops& ops, const comm::Communicator& comm);

class StepGraph {
 public:
  // Steps run eagerly before the capture: the first one makes every lazy allocation.
  static constexpr std::int64_t kWarmupSteps = 1;

  // Decides once (mode On and an obstacle: core::UsageError naming it).
  StepGraph(kernels::Ops& ops, CudaGraphMode mode, std::string obstacle);
  ~StepGraph() { ops_.destroy_graph(graph_); }
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  bool enabled() const { return enabled_; }
  // Whether step number `steps_run` of this trainer (0-based, counted since its construction) runs
  // the graph: enabled and past the warm-up.
  bool graphs_step(std::int64_t steps_run) const { return enabled_ && steps_run >= kWarmupSteps; }
  bool captured() const { return graph_ != 0; }
  // Record the calls between begin() and end() (end: the graph; a refused call is a core::Error);
  // abort() drops an open capture (error paths). `key` sums up the host's decisions the capture bakes
  // in (the trainer's capture_key(): e.g. whether the forward rounds the bf16 weights' copy itself).
  void begin(std::uint64_t key);
  void end();
  void abort() noexcept { ops_.abort_capture(); }
  // Whether the graph was captured under another key: the eager step would now decide differently,
  // so a replay would run stale decisions. discard() destroys the graph; the next graphed step
  // captures again.
  bool stale(std::uint64_t key) const { return graph_ != 0 && key != key_; }
  void discard();
  std::int64_t captures() const { return captures_; }
  // Queues one replay on the compute stream.
  void replay();
  std::int64_t replays() const { return replays_; }
  // "on (forward, backward, gradient collectives, numerics and optimizer ... from step 2)" or "off (why)".
  std::string describe() const;

 private:
  kernels::Ops& ops_;
  bool enabled_ = false;
  std::string obstacle_;  // why not, when off
  CudaGraphMode mode_;
  kernels::Ops::GraphId graph_ = 0;
  std::uint64_t key_ = 0;  // begin()'s key of the live graph
  std::int64_t replays_ = 0;
  std::int64_t captures_ = 0;
};

}  // namespace microddp::ddp
