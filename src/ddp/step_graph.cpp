// step_graph.cpp — eligibility, capture and replay of the step's graph (see step_graph.hpp).
#include "ddp/step_graph.hpp"

#include <utility>

#include "core/error.hpp"
#include "ddp/compression/compression_config.hpp"
#include "ddp/strategy.hpp"
#include "ddp/zero/shard_plan.hpp"

namespace microddp::ddp {

std::string graph_obstacle(const TrainConfig& config, const kernels::Ops& ops, const comm::Communicator& comm) {
  if (!ops.supports_graphs()) return "the CPU runs every call at once: graphs need --device cuda";
  if (!comm.completes_in_stream_order())
    return "--comm " + std::string(comm.name()) +
           " waits for its collectives on the host; only stream-ordered backends (nccl, nccl-ring) can be replayed";
  if (const std::string why = comm.capture_obstacle(); !why.empty())
    return "--comm " + std::string(comm.name()) + ": " + why;
  const StrategyRow& row = strategy_row(config.strategy);
  if (!row.graph_obstacle.empty()) return "--strategy " + std::string(row.name) + " " + std::string(row.graph_obstacle);
  if (config.accum_steps > 1) return "--accum-steps > 1 (a batch is loaded between micro-steps)";
  if (const std::string_view why = compression_mode_row(config.compression.mode).graph_obstacle; !why.empty())
    return "--grad-compression (" + std::string(why) + ")";
  if (const std::string_view why = zero::shard_graph_obstacle(config.shard); !why.empty())
    return "--shard (" + std::string(why) + ")";
  if (config.layer_events) return "per-layer events (--trace, --layer-events: host clocks between layers)";
  if (!config.faults.empty() || comm.has_fault_points()) return "fault injection is armed (it counts host calls)";
  if (comm.debug_sync()) return "--debug-sync (an MPI exchange before every collective)";
  return {};
}

StepGraph::StepGraph(kernels::Ops& ops, CudaGraphMode mode, std::string obstacle)
    : ops_(ops), obstacle_(std::move(obstacle)), mode_(mode) {
  MDDP_USAGE_CHECK(mode != CudaGraphMode::On || obstacle_.empty(),
                   "--cuda-graph on: this run cannot replay its step as a CUDA graph: " << obstacle_);
  enabled_ = mode != CudaGraphMode::Off && obstacle_.empty();
}

void StepGraph::begin(std::uint64_t key) {
  MDDP_CHECK(enabled_ && graph_ == 0, "step graph: capture " << (enabled_ ? "after the graph exists" : "while off"));
  ops_.begin_capture();
  key_ = key;
}

void StepGraph::end() {
  graph_ = ops_.end_capture();
  ++captures_;
}

void StepGraph::discard() {
  ops_.destroy_graph(graph_);
  graph_ = 0;
}

void StepGraph::replay() {
  ops_.launch_graph(graph_);
  ++replays_;
}

std::string StepGraph::describe() const {
  if (enabled_)
    return "on (forward, backward, gradient collectives, numerics and optimizer replayed as one graph from step " +
           std::to_string(kWarmupSteps + 1) + ")";
  if (mode_ == CudaGraphMode::Off) return "off (--cuda-graph off)";
  return "off (" + obstacle_ + ")";
}

}  // namespace microddp::ddp
