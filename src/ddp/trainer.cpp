// trainer.cpp — start-up verification and the per-step loop.
#include "ddp/trainer.hpp"

#include <bit>
#include <cstring>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace microddp::ddp {

std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

namespace {
// Events one step records: step, data, forward, backward, optimizer, loss sync, comm wait, plus per
// parameter a grad-ready instant and up to one collective, plus per-layer events when enabled.
// With K micro-steps, data/forward/backward (and layer events) repeat K times.
std::size_t events_per_step(const model::FullMLP& model, bool layer_events, std::int64_t micro_steps) {
  const std::size_t per_micro = 3 + (layer_events ? 2 * static_cast<std::size_t>(model.num_layers()) : 0);
  return 16 + 2 * model.params().size() + static_cast<std::size_t>(micro_steps) * per_micro;
}
}  // namespace

Trainer::Trainer(const TrainConfig& config, comm::Communicator& comm, kernels::Ops& ops)
    : config_(config),
      comm_(comm),
      ops_(ops),
      dataset_(config.seed, config.model.in_dim, config.model.classes),
      sampler_(config.global_batch, comm.rank(), comm.size()),
      model_(config.model, data::Sampler::max_local_count(config.global_batch, comm.size()), ops),
      optimizer_(model::make_optimizer(config.optimizer, model_.param_count(), ops)),
      labels_(data::Sampler::max_local_count(config.global_batch, comm.size())),
      loss_buf_(1) {
  MDDP_USAGE_CHECK(config.accum_steps >= 1, "accumulation steps must be >= 1, got " << config.accum_steps);
  const std::size_t per_step = events_per_step(model_, config.layer_events, config.accum_steps);
  events_.reserve(config.keep_events ? per_step * static_cast<std::size_t>(config.steps + 1) : per_step);
  sync_ = make_grad_sync(config.strategy, comm, model_.params(), model_.grad_data(), events_, config.sync_options);
  // Hooks are built once here: constructing std::function objects inside step() could allocate.
  grad_ready_hook_ = [this](const model::ParamInfo& p) { sync_->on_grad_ready(p); };
  if (config.layer_events) {
    fwd_hook_ = [this](int layer, bool begin) { layer_event(core::EventKind::LayerForward, layer, begin); };
    bwd_hook_ = [this](int layer, bool begin) { layer_event(core::EventKind::LayerBackward, layer, begin); };
  }
}

void Trainer::set_strategy(const std::string& strategy, const GradSyncOptions& options) {
  comm_.synchronize();
  sync_ = make_grad_sync(strategy, comm_, model_.params(), model_.grad_data(), events_, options);
  config_.strategy = strategy;
  config_.sync_options = options;
}

void Trainer::layer_event(core::EventKind kind, int layer, bool begin) {
  if (begin) {
    layer_begin_ns_ = core::now_ns();
  } else {
    events_.record(kind, current_step_, layer, layer_begin_ns_, core::now_ns());
  }
}

void Trainer::verify_config_across_ranks() {
  // Every field that must agree, as integers (floats by their bit patterns, names hashed).
  auto hash_str = [](const std::string& s) { return static_cast<std::int64_t>(fnv1a64(s.data(), s.size())); };
  auto bits = [](float f) { return static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(f)); };
  const std::vector<std::pair<std::string_view, std::int64_t>> fields = {
      {"in_dim", config_.model.in_dim},
      {"width", config_.model.width},
      {"depth", config_.model.depth},
      {"classes", config_.model.classes},
      {"param_count", model_.param_count()},
      {"global_batch", config_.global_batch},
      {"accum_steps", config_.accum_steps},
      {"bucket_bytes", static_cast<std::int64_t>(config_.sync_options.bucket_mb * 1048576.0)},
      {"first_bucket_bytes", static_cast<std::int64_t>(config_.sync_options.first_bucket_mb * 1048576.0)},
      {"steps", config_.steps},
      {"seed", static_cast<std::int64_t>(config_.seed)},
      {"strategy", hash_str(config_.strategy)},
      {"communicator", hash_str(std::string(comm_.name()))},
      {"optimizer", hash_str(config_.optimizer.name)},
      {"lr", bits(config_.optimizer.lr)},
      {"weight_decay", bits(config_.optimizer.weight_decay)},
      {"momentum", bits(config_.optimizer.momentum)},
  };
  const auto n = static_cast<std::int64_t>(fields.size());
  std::vector<std::int64_t> mine(fields.size());
  for (std::size_t i = 0; i < fields.size(); ++i) mine[i] = fields[i].second;
  std::vector<std::int64_t> all(fields.size() * static_cast<std::size_t>(comm_.size()));
  // The field count itself is compared first, so a different build cannot misalign the exchange.
  std::int64_t count_mine = n, count_max = 0, count_min = 0;
  comm_.all_reduce(core::TensorView::of(&count_mine, 1), core::TensorView::of(&count_max, 1), comm::ReduceOp::Max);
  comm_.all_reduce(core::TensorView::of(&count_mine, 1), core::TensorView::of(&count_min, 1), comm::ReduceOp::Min);
  MDDP_AGREED_USAGE_CHECK(count_max == count_min, "ranks run different microddp builds (configuration has " << count_min
                                                                                                    << " vs " << count_max << " fields)");
  comm_.all_gather(core::TensorView::of(mine.data(), n), core::TensorView::of(all.data(), n * comm_.size()));
  for (int r = 1; r < comm_.size(); ++r) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const std::int64_t v0 = all[i], vr = all[static_cast<std::size_t>(r) * fields.size() + i];
      MDDP_AGREED_USAGE_CHECK(v0 == vr, "configuration mismatch: rank " << r << " has " << fields[i].first << " = " << vr
                                                                  << " but rank 0 has " << v0
                                                                  << " (all ranks must be started with the same options)");
    }
  }
}

std::uint64_t Trainer::param_checksum() const {
  return fnv1a64(model_.param_data(), static_cast<std::size_t>(model_.param_count()) * sizeof(float));
}

void Trainer::verify_params_across_ranks() {
  auto mine = static_cast<std::int64_t>(param_checksum());
  std::vector<std::int64_t> all(static_cast<std::size_t>(comm_.size()));
  comm_.all_gather(core::TensorView::of(&mine, 1), core::TensorView::of(all.data(), comm_.size()));
  for (int r = 1; r < comm_.size(); ++r) {
    MDDP_CHECK(all[static_cast<std::size_t>(r)] == all[0], "rank " << r << " holds different parameters than rank 0 after the initial broadcast");
  }
}

void Trainer::set_data_source(const data::DataSource& source) {
  MDDP_USAGE_CHECK(source.in_dim() == config_.model.in_dim && source.classes() == config_.model.classes,
                   "data source " << source.describe() << " has " << source.in_dim() << " features and "
                                  << source.classes() << " classes but the model expects " << config_.model.in_dim
                                  << " and " << config_.model.classes << " (use --in-dim / --classes)");
  source_ = &source;
}

void Trainer::restore_progress(std::int64_t steps_done) {
  MDDP_CHECK(steps_done >= 0, "bad restored step count " << steps_done);
  steps_done_ = steps_done;
  verify_params_across_ranks();
}

void Trainer::setup() {
  verify_config_across_ranks();
  MDDP_AGREED_USAGE_CHECK(config_.global_batch >= comm_.size(),
                          "global batch " << config_.global_batch << " is smaller than the " << comm_.size()
                                          << " ranks: some ranks would get no data");
  model_.init(config_.seed);
  // Initialisation is already rank-independent; the broadcast makes rank 0 the single source of
  // truth anyway (as PyTorch DDP does), and the checksum proves every rank holds it.
  comm_.broadcast(model_.param_view(), 0);
  verify_params_across_ranks();
}

StepRecord Trainer::step() {
  const std::int64_t step = steps_done_;
  current_step_ = step;
  if (!config_.keep_events) events_.clear();
  const std::int64_t step_begin = core::now_ns();
  const std::int64_t rows = sampler_.local_count();
  const std::int64_t micro_steps = config_.accum_steps;
  const float loss_scale = 1.0f / static_cast<float>(micro_steps * config_.global_batch);
  double local_loss = 0.0;
  for (std::int64_t k = 0; k < micro_steps; ++k) {
    const bool last = k + 1 == micro_steps;
    {
      core::ScopedEvent e(events_, core::EventKind::Data, step);
      source_->fill(sampler_.first_sample(steps_done_ * micro_steps + k), rows, model_.input(), labels_.data());
    }
    {
      core::ScopedEvent e(events_, core::EventKind::Forward, step);
      model_.forward(model_.input(), rows, fwd_hook_);
    }
    // Only the last micro-step synchronises: the others just accumulate local gradients (no
    // grad_ready hook, so no collectives at all).
    if (last) sync_->on_backward_begin(step);
    {
      core::ScopedEvent e(events_, core::EventKind::Backward, step);
      // The first micro-step overwrites the gradients (no zero_grad pass), later ones accumulate.
      local_loss += model_.backward(labels_.data(), loss_scale, last ? grad_ready_hook_ : no_ready_hook_, bwd_hook_,
                                    /*accumulate=*/k > 0);
    }
  }
  sync_->finish();
  {
    core::ScopedEvent e(events_, core::EventKind::LossSync, step);
    loss_buf_[0] = local_loss;
    comm_.all_reduce(core::TensorView::of(loss_buf_.data(), 1), comm::ReduceOp::Sum);
  }
  {
    core::ScopedEvent e(events_, core::EventKind::Optimizer, step);
    optimizer_->step(model_.param_data(), model_.grad_data());
  }
  events_.record(core::EventKind::Step, step, -1, step_begin, core::now_ns());
  ++steps_done_;
  return StepRecord{step, loss_buf_[0]};
}

}  // namespace microddp::ddp
