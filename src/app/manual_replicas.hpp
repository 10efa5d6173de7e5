// manual_replicas.hpp — the replicas of `microddp manual` (course warm-up 2, docs/baseline.md) and
// how their gradients are combined, apart from the command so lab 01's grader (tests/labs) drives
// the same code.
//
// ManualReplicas: `replicas` copies of the model in one process, replica r on its share of every
// global batch (data::Sampler(global_batch, r, replicas), as rank r of `train -np replicas` reads),
// each loss divided by the GLOBAL batch size; step() runs forward and backward on every replica,
// hands their gradient buffers to a ReplicaCombiner (none: --no-sync), and steps every optimizer.
//
// sum_replica_gradients is ours: element by element g_0 + g_1 + ... added in replica order, the
// result written to every replica. Because each loss already carries 1/B, that sum IS the global
// batch's mean gradient. With two replicas it is the single addition g_A + g_B that `train -np 2`'s
// all-reduce makes (in either order: float addition is commutative), so `manual` ends with the
// checksum of `train -np 2` bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/host_buffer.hpp"
#include "data/synthetic_dataset.hpp"
#include "ddp/train_config.hpp"
#include "kernels/ops.hpp"
#include "model/mlp.hpp"
#include "model/optimizer.hpp"

namespace microddp::app {

// replicas[r]: replica r's flat gradient buffer, `count` floats. Afterwards every buffer holds the combination.
using ReplicaCombiner = void (*)(std::span<float* const> replicas, std::int64_t count);

// Ours: the sum in replica order ((g_0 + g_1) + g_2) + ..., written back to every replica.
void sum_replica_gradients(std::span<float* const> replicas, std::int64_t count);

// Who combines the replicas' gradients (`manual --average NAME`): one table of combiners. Ours is
// the production row; the course's lab 01 adds `lab` at start-up (app/lab_commands.hpp), so this
// library does not depend on the labs.
struct ReplicaCombinerRow {
  std::string_view name;      // --average NAME
  std::string_view help;      // what it is, after the name in --average's help ("": nothing)
  std::string_view summary;   // how the gradients are combined, in the run's first line
  std::string_view diverged;  // appended to "replicas diverged at step N" (why that may happen)
  ReplicaCombiner combine = nullptr;
};
// Appends a row (a name not in the table yet; its strings are literals).
void register_replica_combiner(const ReplicaCombinerRow& row);
// Every row, ours first.
const std::vector<ReplicaCombinerRow>& replica_combiners();
// The row named `name`, or nullptr.
const ReplicaCombinerRow* find_replica_combiner(std::string_view name);

class ManualReplicas {
 public:
  // `config`: model, optimizer, global batch and seed (strategy and communication are not used).
  ManualReplicas(const ddp::TrainConfig& config, int replicas, int blas_threads);
  int replicas() const { return static_cast<int>(models_.size()); }
  // One step on global batch `step`: forward and backward on every replica, `combine` their gradients
  // (nullptr: leave each replica's own), every optimizer steps. losses[r] = replica r's share of the loss.
  void step(std::int64_t step, ReplicaCombiner combine, std::span<double> losses);
  const model::FullMLP& replica(int r) const { return *models_[static_cast<std::size_t>(r)]; }
  const data::Sampler& sampler(int r) const { return samplers_[static_cast<std::size_t>(r)]; }
  std::int64_t param_count() const { return models_.front()->flat_count(); }
  // FNV-1a of replica r's parameter bytes (the checksum `manual`, `train` and `baseline` print).
  std::uint64_t checksum(int r) const;

 private:
  ddp::TrainConfig config_;
  std::unique_ptr<kernels::Ops> ops_;
  data::SyntheticDataset dataset_;
  std::vector<std::unique_ptr<model::FullMLP>> models_;
  std::vector<std::unique_ptr<model::Optimizer>> optimizers_;
  std::vector<data::Sampler> samplers_;
  std::vector<float*> grads_;  // each replica's gradient buffer: what a combiner gets
  core::HostBuffer<std::int32_t> labels_;
};

}  // namespace microddp::app
