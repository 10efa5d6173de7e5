// trainer.cpp — the parts wired together, and step() as the sequence of its phases.
#include "ddp/trainer.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"
#include "ddp/config_agreement.hpp"
#include "ddp/prefetching_input.hpp"
#include "ddp/sync_and_update.hpp"

namespace microddp::ddp {

namespace {
// A profiler range (NVTX with CudaOps, so nsys shows the phases; nothing on the CPU) for one scope.
class OpsRange {
 public:
  OpsRange(kernels::Ops& ops, const char* name) : ops_(ops) { ops_.range_push(name); }
  ~OpsRange() { ops_.range_pop(); }
  OpsRange(const OpsRange&) = delete;
  OpsRange& operator=(const OpsRange&) = delete;

 private:
  kernels::Ops& ops_;
};

// Events one step records: step, data, forward, backward, optimizer, loss sync, comm wait, plus per
// parameter a grad-ready instant and up to one collective (two events: Collective and
// CollectiveExec), plus per-layer events when enabled.
// With K micro-steps, data/forward/backward (and layer events) repeat K times.
std::size_t events_per_step(const model::FullMLP& model, bool layer_events, std::int64_t micro_steps) {
  const std::size_t per_micro = 3 + (layer_events ? 2 * static_cast<std::size_t>(model.num_layers()) : 0);
  // Sharded, per bucket (at most one per parameter): reduce-scatter (2), a gradient-pool wait (1),
  // all-gather (2), its wait in the next forward (1) and the Forward piece after that wait (1).
  return 16 + 8 * model.params().size() + static_cast<std::size_t>(micro_steps) * per_micro;
}

// The checks of the configuration the parts do not make themselves (the first thing a Trainer does).
const TrainConfig& checked(const TrainConfig& c, const kernels::Ops& ops) {
  MDDP_USAGE_CHECK(c.accum_steps >= 1, "accumulation steps must be >= 1, got " << c.accum_steps);
  MDDP_USAGE_CHECK(c.check_every >= 0, "check interval must be >= 0, got " << c.check_every);
  MDDP_USAGE_CHECK(c.prefetch >= 0 && c.prefetch <= PrefetchingInput::kMaxDepth,
                   "prefetch depth must lie in [0, " << PrefetchingInput::kMaxDepth << "], got " << c.prefetch);
  MDDP_USAGE_CHECK(std::isfinite(c.clip_grad_norm) && c.clip_grad_norm >= 0.0f,
                   "gradient clipping norm must be finite and >= 0, got " << c.clip_grad_norm);
  // The sleep emulates a device on the CPU path; on a GPU the device computes (and a sleep on the host
  // would only delay the queueing, not the kernels, nor be part of a CUDA graph's replay).
  MDDP_USAGE_CHECK(c.simulate_compute_ms == 0.0f || ops.device() == core::Device::Host,
                   "--simulate-compute-ms emulates an accelerator on the CPU path; with a GPU model leave it at 0");
  return c;
}
}  // namespace

Trainer::Trainer(const TrainConfig& config, comm::Communicator& comm, kernels::Ops& ops)
    : config_(checked(config, ops)),
      comm_(comm),
      ops_(ops),
      model_(config.model, data::Sampler::max_local_count(config.global_batch, comm.size()), ops, config.precision),
      schedule_(config.optimizer.lr, config.lr_schedule),
      verdict_(comm, ops, config.accum_steps, config.on_nan),
      timing_(ops, events_, config.accum_steps),
      faults_(config_.faults, comm.rank()),
      simulated_(model_, config_.simulate_compute_ms) {
  choose_input(nullptr);
  // Stream-ordered backends (NCCL) order gradient collectives after the backward kernels queued on
  // this stream; host backends ignore it.
  comm.set_compute_stream(ops.stream());
  const std::size_t per_step = events_per_step(model_, config.layer_events, config.accum_steps);
  events_.reserve(config.keep_events ? per_step * static_cast<std::size_t>(config.steps + 1) : per_step);
  SyncAndUpdate parts = make_sync_and_update(config_, comm_, model_, ops_, events_);
  sync_ = std::move(parts.sync);
  update_ = std::move(parts.update);
  divergence_ = std::make_unique<DivergenceCheck>(comm_, model_.params(), update_->checked_state().params,
                                                  update_->checked_state().optimizer);
  graph_ = std::make_unique<StepGraph>(ops_, config_.cuda_graph, graph_obstacle(config_, ops_, comm_));
  grad_ready_hook_ = [this](const model::ParamInfo& p) { sync_->on_grad_ready(p); };
  const bool layer_events = config_.layer_events;
  if (layer_events || simulated_.active()) {
    // The simulated compute is part of the layer's backward: inside its event, before its gradients.
    bwd_hook_ = [this, layer_events](int layer, bool begin) {
      if (layer_events) layer_event(core::EventKind::LayerBackward, layer, begin);
      if (begin) simulated_.wait_before_layer(layer);
    };
  }
  if (update_->gathers_in_forward() || layer_events) {
    fwd_hook_ = [this, layer_events](int layer, bool begin) {
      if (begin) update_->await_layer(layer, current_step_);  // before the event starts
      if (layer_events) layer_event(core::EventKind::LayerForward, layer, begin);
    };
  }
}

void Trainer::choose_input(const data::DataSource* source) {
  InputChoice c = make_input_pipeline(ops_, config_, comm_.rank(), comm_.size(), model_.input(), source);
  input_ = std::move(c.pipeline);
  input_note_ = std::move(c.note);
}

DataSourceLease Trainer::set_data_source(const data::DataSource& source) {
  // The pipeline depends on the source (make_input_pipeline): a new one, before the first load.
  choose_input(&source);
  source_released_ = false;
  return DataSourceLease(*this);
}

void Trainer::release_data_source() noexcept {
  source_released_ = true;
  try {
    input_->restart();  // a prefetching pipeline joins its loader; the next load would start it anew
  } catch (const std::exception& e) {  // a GPU stream error while waiting for an upload
    MDDP_WARN("trainer: stopping the input pipeline failed: " << e.what());
  }
}

Trainer::~Trainer() {
  try {
    finish_param_gather();
  } catch (const std::exception& e) {  // a communicator error: already reported where it happened
    MDDP_WARN("trainer destroyed with a failed parameter all-gather: " << e.what());
  }
}

void Trainer::setup() {
  verify_config_across_ranks(config_, comm_, model_.flat_count(), ops_.device());
  MDDP_AGREED_USAGE_CHECK(config_.global_batch >= comm_.size(),
                          "global batch " << config_.global_batch << " is smaller than the " << comm_.size()
                                          << " ranks: some ranks would get no data");
  model_.init(config_.seed);
  // Initialisation is already rank-independent; the broadcast makes rank 0 the single source of
  // truth anyway (as PyTorch DDP does), and the checksum proves every rank holds it.
  comm_.broadcast(model_.param_view(), 0);
  verify_state_across_ranks("after the initial broadcast", -1);
  comm_.check_sync("sync check at start-up");  // every set-up collective matched on every rank
}

StepRecord Trainer::step() {
  MDDP_CHECK(!source_released_, "trainer: step() after its data source's lease ended (set_data_source again first)");
  const std::int64_t step = steps_done_;
  current_step_ = step;
  if (!config_.keep_events) events_.clear();
  const std::int64_t step_begin = core::now_ns();
  const float loss_scale = 1.0f / static_cast<float>(config_.accum_steps * config_.global_batch);
  // The step's learning rate, before the phases: a replayed step's optimizer scalars are staged
  // in graphed_phases, an eager step's when the update begins.
  const float lr = schedule_.lr(step);
  update_->optimizer().set_lr(lr);
  // 1-3. Data, forward and backward per micro-step (the last backward launches the gradient sync),
  // the sync completes, and the numerics verdict is agreed: the step's one host synchronisation.
  const bool graphed = graph_->graphs_step(steps_run_);
  if (graphed) {
    graphed_phases(step, loss_scale);
  } else {
    eager_phases(step, loss_scale);
  }
  ++steps_run_;
  if (verdict_.nonfinite()) {  // throws under --on-nan abort
    const GradCompressor* c = sync_->compressor();
    verdict_.enforce(step, c != nullptr ? c->nonfinite_hint() : std::string_view{});
  }
  // 4. The optimizer update, unless the step is skipped. A replayed step has run its update already,
  // gated on the device by the same verdict; the host only counts it.
  const double grad_norm = verdict_.grad_norm();
  if (!verdict_.nonfinite()) {
    if (graphed) {
      gated_update().commit_gated();
    } else {
      update(grad_norm);
    }
  }
  update_->end_step();
  // 5. Fault points and the periodic checks.
  if (const core::ArmedFault* f = faults_.perturb_parameter(step)) {
    finish_param_gather();
    StepFaults::flip_parameter_bit(model_, f->arg);
  }
  events_.record(core::EventKind::Step, step, -1, step_begin, core::now_ns());
  ++steps_done_;
  periodic_checks();
  return StepRecord{step, verdict_.loss(), grad_norm, lr, verdict_.nonfinite()};
}

void Trainer::eager_phases(std::int64_t step, float loss_scale) {
  // 1. Data, forward, backward per micro-step; the last one's backward launches the gradient sync.
  const std::int64_t micro_steps = config_.accum_steps;
  for (std::int64_t k = 0; k < micro_steps; ++k) micro_step(step, k, loss_scale);
  // 2. Gradient sync completes: the gradients (or this rank's shard) hold the global-batch gradient.
  {
    OpsRange r(ops_, "gradient sync wait");
    sync_->finish();  // host backends wait here; stream-ordered ones order the compute stream instead
  }
  if (sync_->compressor() != nullptr) {  // its work is spread over the sync: recorded as one total
    const std::int64_t end = core::now_ns();
    events_.record(core::EventKind::Compress, step, -1, end - sync_->compression_ns(), end);
  }
  if (faults_.nan_gradient(step)) update_->poison_gradient();
  // 3. The numerics verdict, agreed by all ranks: the step's one host synchronisation.
  const std::int64_t loss_begin = core::now_ns();
  {
    OpsRange r(ops_, "loss sync and numerics");
    update_->grad_sum_squares_to(verdict_.sum_squares());
    verdict_.reduce(micro_steps);
  }
  sync_->complete(timing_.backward_end_ns());
  timing_.record_resolved(step);
  events_.record(core::EventKind::LossSync, step, -1, loss_begin, core::now_ns());
}

void Trainer::graphed_phases(std::int64_t step, float loss_scale) {
  // One micro-step (graph_obstacle). The batch is uploaded outside the graph, which reads the model's
  // input buffer (its address is fixed) after the upload, in stream order.
  load_batch(step, 0);
  gated_update().stage_gated();  // this step's optimizer scalars (Adam's step count), read by the replay
  if (graph_->stale(capture_key())) graph_->discard();  // e.g. weights changed from the host: capture anew
  if (!graph_->captured()) {
    // The capture runs phases 1-4's host code once and records their calls instead of running them;
    // the replay below is this step's execution, as it is every later step's. The optimizer is gated
    // on the device by the verdict's all-reduced numbers (skip, clip): it cannot wait for the host.
    graph_->begin(capture_key());
    try {
      forward_backward(step, 0, loss_scale);
      sync_->finish();
      update_->grad_sum_squares_to(verdict_.sum_squares());
      verdict_.queue_reduce(1);
      {
        OpsRange r(ops_, "optimizer");
        timing_.graph_optimizer_begin();
        gated_update().apply_gated(verdict_.device_numerics(), config_.clip_grad_norm);
        timing_.graph_optimizer_end();
      }
      graph_->end();
    } catch (...) {
      graph_->abort();
      throw;
    }
    sync_->discard_deferred();  // the captured collectives run in the replays: nothing to time or wait here
  }
  {
    OpsRange r(ops_, "step graph");
    graph_->replay();
  }
  const std::int64_t loss_begin = core::now_ns();
  {
    OpsRange r(ops_, "loss sync and numerics");
    verdict_.wait_reduce();  // the replay's marks are resolved with it
  }
  timing_.record_resolved(step);
  timing_.record_graph_optimizer(step);
  events_.record(core::EventKind::LossSync, step, -1, loss_begin, core::now_ns());
}

std::uint64_t Trainer::capture_key() const {
  // What the captured host code decides from state the host may change between replays: whether the
  // bf16 forward rounds the weights itself (FullMLP::forward_rounds_weights). The same on every rank
  // (the ranks' models change together), so every rank captures again at the same step.
  return model_.forward_rounds_weights() ? 1 : 0;
}

void Trainer::load_batch(std::int64_t step, std::int64_t k) {
  core::ScopedEvent e(events_, core::EventKind::Data, step);
  OpsRange r(ops_, "data");
  input_->load(step * config_.accum_steps + k, k == 0 && faults_.nan_input(step));
}

void Trainer::forward_backward(std::int64_t step, std::int64_t k, float loss_scale) {
  const bool last = k + 1 == config_.accum_steps;
  {
    OpsRange r(ops_, "forward");
    timing_.forward_begin(k);
    model_.forward(model_.input(), input_->rows(), fwd_hook_);
    timing_.forward_end(step, k, update_->forward_waits());
    update_->clear_forward_waits();
  }
  // Only the last micro-step synchronises: the others just accumulate local gradients (no
  // grad_ready hook, so no collectives at all).
  if (last) sync_->on_backward_begin(step);
  {
    OpsRange r(ops_, "backward");
    timing_.backward_begin(k);
    simulated_.begin_pass();
    // The first micro-step overwrites the gradients (no zero_grad pass), later ones accumulate.
    model_.backward_into(input_->labels(), loss_scale, verdict_.micro_loss(k), last ? grad_ready_hook_ : no_ready_hook_,
                         bwd_hook_, /*accumulate=*/k > 0);
    timing_.backward_end(step, k);
  }
}

GatedUpdate& Trainer::gated_update() {
  GatedUpdate* g = update_->gated();
  MDDP_CHECK(g != nullptr, "a graphed step needs an optimizer update decided on the device (the replicated one)");
  return *g;
}

void Trainer::update(double grad_norm) {
  OpsRange r(ops_, "optimizer");
  timing_.optimizer_begin();
  // PyTorch's clip_grad_norm_ over the global-batch gradient: the same factor on every rank.
  const double clip = config_.clip_grad_norm > 0.0f ? clip_factor(grad_norm, config_.clip_grad_norm) : 1.0;
  update_->apply(clip);
  timing_.optimizer_end(current_step_);
}

void Trainer::periodic_checks() {
  // Desync first: a divergence check over mismatched collectives could itself hang or mislead.
  if (config_.sync_check_every > 0 && steps_done_ % config_.sync_check_every == 0) {
    comm_.check_sync("sync check at", steps_done_);
  }
  if (config_.check_every > 0 && steps_done_ % config_.check_every == 0) check_divergence();
}

void Trainer::check_divergence() {
  divergence_->check_after_step(steps_done_, optimizer_steps(), [this] {
    finish_param_gather();
    update_->checked_state_to_host();
  });
}

void Trainer::verify_state_across_ranks(const char* when, std::int64_t step) {
  // GPU: refresh the mirror the check reads (sharded: parameters only, see OptimizerUpdate).
  finish_param_gather();
  update_->checked_state_to_host();
  divergence_->verify(when, step, optimizer_steps());
}

void Trainer::layer_event(core::EventKind kind, int layer, bool begin) {
  if (begin) {
    layer_begin_ns_ = core::now_ns();
  } else {
    events_.record(kind, current_step_, layer, layer_begin_ns_, core::now_ns());
  }
}

model::FullMLP& Trainer::model() {
  finish_param_gather();
  return model_;
}

const model::FullMLP& Trainer::model() const {
  finish_param_gather();
  return model_;
}

zero::MemoryReport Trainer::memory_report() const {
  constexpr std::int64_t kF = sizeof(float);
  zero::MemoryReport m;
  m.parameters = model_.param_buffer().count() * kF;
  m.gradients = model_.grad_buffer().count() * kF;  // 0 when a ZeRO-2 gradient pool replaced it
  m.activations = model_.activation_bytes();
  update_->add_memory(m);
  return m;
}

const Trainer::HostState& Trainer::host_state() const {
  finish_param_gather();  // a loader writes the parameters through this view
  return update_->host_state();
}

void Trainer::state_to_host() const {
  finish_param_gather();
  update_->state_to_host();
}

void Trainer::state_from_host() {
  finish_param_gather();
  update_->state_from_host();
}

void Trainer::restore_progress(std::int64_t steps_done, std::int64_t optimizer_steps) {
  optimizer().set_steps_taken(optimizer_steps);
  restore_progress(steps_done);
}

void Trainer::restore_progress(std::int64_t steps_done) {
  MDDP_CHECK(steps_done >= 0, "bad restored step count " << steps_done);
  steps_done_ = steps_done;
  input_->restart();  // the next load names the restored step's first batch
  verify_state_across_ranks("after loading the checkpoint of step", steps_done);
  divergence_->mark_checked(steps_done_);
}

std::uint64_t Trainer::param_checksum() const {
  finish_param_gather();
  update_->params_to_host();
  const HostState& view = update_->checked_state();
  return core::fnv1a64(view.params, static_cast<std::size_t>(view.param_count) * sizeof(float));
}

}  // namespace microddp::ddp
