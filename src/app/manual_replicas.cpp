// manual_replicas.cpp — see manual_replicas.hpp.
#include "app/manual_replicas.hpp"

#include "core/error.hpp"
#include "core/hash.hpp"

namespace microddp::app {

namespace {

std::vector<ReplicaCombinerRow>& table() {
  static std::vector<ReplicaCombinerRow> rows = {
      {"ours", "", "gradients combined by hand (g = g_A + g_B)", "", &sum_replica_gradients},
  };
  return rows;
}

}  // namespace

void register_replica_combiner(const ReplicaCombinerRow& row) {
  MDDP_CHECK(find_replica_combiner(row.name) == nullptr, "replica combiner '" << row.name << "' registered twice");
  table().push_back(row);
}

const std::vector<ReplicaCombinerRow>& replica_combiners() { return table(); }

const ReplicaCombinerRow* find_replica_combiner(std::string_view name) {
  for (const ReplicaCombinerRow& row : table()) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

void sum_replica_gradients(std::span<float* const> replicas, std::int64_t count) {
  if (replicas.empty()) return;
  for (std::int64_t i = 0; i < count; ++i) {
    float sum = replicas[0][i];
    for (std::size_t r = 1; r < replicas.size(); ++r) sum += replicas[r][i];  // replica order, as rank order
    for (float* g : replicas) g[i] = sum;
  }
}

ManualReplicas::ManualReplicas(const ddp::TrainConfig& config, int replicas, int blas_threads)
    : config_(config),
      ops_(kernels::make_cpu_ops(blas_threads)),
      dataset_(config.seed, config.model.in_dim, config.model.classes),
      labels_(data::Sampler::max_local_count(config.global_batch, replicas)) {
  MDDP_USAGE_CHECK(replicas >= 1 && config.global_batch >= replicas,
                   "--global-batch must be at least " << replicas << " (one row per replica)");
  const std::int64_t max_rows = data::Sampler::max_local_count(config.global_batch, replicas);
  for (int r = 0; r < replicas; ++r) {
    models_.push_back(std::make_unique<model::FullMLP>(config.model, max_rows, *ops_));
    optimizers_.push_back(model::make_optimizer(config.optimizer, models_.back()->flat_count(), *ops_));
    samplers_.emplace_back(config.global_batch, r, replicas);
    models_.back()->init(config.seed);
    grads_.push_back(models_.back()->grad_data());
  }
}

void ManualReplicas::step(std::int64_t step, ReplicaCombiner combine, std::span<double> losses) {
  MDDP_CHECK(losses.size() == models_.size(),
             "losses for " << losses.size() << " of " << models_.size() << " replicas");
  for (std::size_t r = 0; r < models_.size(); ++r) {
    model::FullMLP& m = *models_[r];
    const data::Sampler& smp = samplers_[r];
    dataset_.fill(smp.first_sample(step), smp.local_count(), m.input(), labels_.data());
    m.zero_grad();
    m.forward(m.input(), smp.local_count());
    losses[r] = m.backward(labels_.data(), 1.0f / static_cast<float>(config_.global_batch), nullptr);
  }
  // The hand-written all-reduce (unless --no-sync): every replica ends with the combined gradient.
  if (combine != nullptr) combine(grads_, param_count());
  for (std::size_t r = 0; r < models_.size(); ++r)
    optimizers_[r]->step(models_[r]->param_data(), models_[r]->grad_data());
}

std::uint64_t ManualReplicas::checksum(int r) const {
  const model::FullMLP& m = replica(r);
  return core::fnv1a64(m.param_data(), static_cast<std::size_t>(m.flat_count()) * sizeof(float));
}

}  // namespace microddp::app
