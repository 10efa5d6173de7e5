// model_memory.cpp — see model_memory.hpp.
#include "app/model_memory.hpp"

#include <algorithm>
#include <sstream>

#include "core/error.hpp"
#include "model/optimizer.hpp"
#include "model/param_layout.hpp"

namespace microddp::app {

double activation_bytes(const model::MlpConfig& c, std::int64_t rows) {
  const double r = static_cast<double>(rows);
  double floats = r * static_cast<double>(c.classes) + 1;
  std::int64_t max_features = c.classes;
  for (std::int64_t layer = 0; layer <= c.depth; ++layer) {
    const std::int64_t in = layer == 0 ? c.in_dim : c.width, out = layer == c.depth ? c.classes : c.width;
    floats += r * static_cast<double>(in);
    max_features = std::max({max_features, in, out});
  }
  return static_cast<double>(sizeof(float)) * (floats + 2 * r * static_cast<double>(max_features));
}

ModelMemory estimate_model_memory(const ddp::TrainConfig& cfg, int ranks) {
  ranks = std::max(ranks, 1);
  const double flat = static_cast<double>(model::flat_count(model::param_layout(cfg.model)));
  const double state_buffers = static_cast<double>(model::optimizer_state_names(cfg.optimizer).size());
  const double bytes = sizeof(float);
  ModelMemory m;
  m.rows = (cfg.global_batch + ranks - 1) / ranks;
  m.parameters = bytes * flat;
  const bool sharded = cfg.shard != ddp::zero::ShardMode::None;
  // --shard gradients keeps a reduced shard (and a bucket pool, not counted); otherwise the full buffer.
  m.gradients = cfg.shard == ddp::zero::ShardMode::Gradients ? bytes * flat / ranks : bytes * flat;
  m.optimizer_state = bytes * state_buffers * (sharded ? flat / ranks : flat);
  m.activations = activation_bytes(cfg.model, m.rows);
  const double batches = 1.0 + static_cast<double>(std::max<std::int64_t>(cfg.prefetch, 0));
  m.input_batches = batches * static_cast<double>(m.rows) * (bytes * static_cast<double>(cfg.model.in_dim) + 4.0);
  return m;
}

std::string model_memory_refusal(const ddp::TrainConfig& cfg, int ranks, const core::MemoryBudget& budget,
                                 int replicas) {
  const ModelMemory m = estimate_model_memory(cfg, ranks);
  if (!budget.bytes || replicas * m.total() <= static_cast<double>(*budget.bytes)) return {};
  using core::format_bytes;
  std::ostringstream os;
  const model::MlpConfig& c = cfg.model;
  os << "the model " << c.in_dim << "-" << c.width << "x" << c.depth << "-" << c.classes << " needs at least "
     << format_bytes(replicas * m.total()) << " of memory "
     << (replicas > 1 ? "for its " + std::to_string(replicas) + " replicas, each" : std::string("per rank"))
     << " (parameters " << format_bytes(m.parameters) << ", gradients "
     << format_bytes(m.gradients) << ", optimizer state " << format_bytes(m.optimizer_state) << ", activations of "
     << m.rows << " rows " << format_bytes(m.activations) << "), but a rank can have "
     << format_bytes(static_cast<double>(*budget.bytes)) << " (" << budget.limited_by
     << "): make --width, --depth or the batch per rank smaller, or use more ranks with --shard";
  return os.str();
}

void require_model_memory(const ddp::TrainConfig& cfg, int ranks, int replicas) {
  const std::string refusal =
      model_memory_refusal(cfg, ranks, core::memory_budget(core::host_memory(), 1), replicas);
  MDDP_USAGE_CHECK(refusal.empty(), refusal);
}

}  // namespace microddp::app
