// trainer.cpp — start-up verification and the per-step loop.
#include "ddp/trainer.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"
#include "ddp/train_config_fields.hpp"
#include "ddp/zero/make_zero_sync.hpp"

namespace microddp::ddp {

using core::fnv1a64;

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

// A GPU step takes 4 device marks per micro-step (forward and backward begin/end) and resolves them
// only at its one synchronisation, so they must fit Ops::kMarkSlots with the optimizer's 2: beyond
// this many micro-steps, only the last micro-step's phases are timed (the step, communication and
// loss times stay complete).
constexpr std::int64_t kTimedMicroSteps = 200;
static_assert(4 * (kTimedMicroSteps + 1) + 2 <= kernels::Ops::kMarkSlots, "marks of one step must fit the ring");

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
// Elements of each optimizer state buffer: the flat buffers, or this rank's shard (shard_plan.hpp).
std::int64_t optimizer_state_count(const TrainConfig& c, const comm::Communicator& comm, const model::FullMLP& m) {
  if (c.shard == zero::ShardMode::None) return m.flat_count();
  return zero::plan_for_strategy(c.strategy, c.sync_options, m.params(), m.flat_count(), comm.size(), comm.rank())
      .state_count();
}
}  // namespace

Trainer::Trainer(const TrainConfig& config, comm::Communicator& comm, kernels::Ops& ops)
    : config_(config),
      comm_(comm),
      ops_(ops),
      dataset_(config.seed, config.model.in_dim, config.model.classes),
      sampler_(config.global_batch, comm.rank(), comm.size()),
      model_(config.model, data::Sampler::max_local_count(config.global_batch, comm.size()), ops),
      optimizer_(model::make_optimizer(config.optimizer, optimizer_state_count(config, comm, model_), ops)),
      on_host_(ops.device() == core::Device::Host),
      labels_(ops, data::Sampler::max_local_count(config.global_batch, comm.size())),
      nonfinite_all_(2 * static_cast<std::size_t>(comm.size())) {
  MDDP_USAGE_CHECK(config.accum_steps >= 1, "accumulation steps must be >= 1, got " << config.accum_steps);
  micro_losses_ = kernels::OpsBuffer<float>(ops, config.accum_steps);
  numerics_ = kernels::OpsBuffer<double>(ops, 7);
  host_numerics_ = kernels::OpsHostBuffer<double>(ops, 7);
  micro_marks_.resize(static_cast<std::size_t>(config.accum_steps));
  // Stream-ordered backends (NCCL) order gradient collectives after the backward kernels queued on
  // this stream; host backends ignore it.
  comm.set_compute_stream(ops.native_stream());
  if (!on_host_) {
    const std::int64_t rows = data::Sampler::max_local_count(config.global_batch, comm.size());
    host_input_ = kernels::OpsHostBuffer<float>(ops, rows * config.model.in_dim);
    device_labels_ = kernels::OpsBuffer<std::int32_t>(ops, rows);
  }
  MDDP_USAGE_CHECK(config.check_every >= 0, "check interval must be >= 0, got " << config.check_every);
  MDDP_USAGE_CHECK(std::isfinite(config.clip_grad_norm) && config.clip_grad_norm >= 0.0f,
                   "gradient clipping norm must be finite and >= 0, got " << config.clip_grad_norm);
  build_host_state();
  const std::size_t per_step = events_per_step(model_, config.layer_events, config.accum_steps);
  events_.reserve(config.keep_events ? per_step * static_cast<std::size_t>(config.steps + 1) : per_step);
  build_sync();  // also builds the layer hooks (they depend on the strategy)
  // Hooks are built here and in build_sync: constructing std::function objects inside step() could
  // allocate.
  grad_ready_hook_ = [this](const model::ParamInfo& p) { sync_->on_grad_ready(p); };
}

Trainer::~Trainer() {
  try {
    finish_param_gather();
  } catch (const std::exception& e) {  // a communicator error: already reported where it happened
    MDDP_WARN("trainer destroyed with a failed parameter all-gather: " << e.what());
  }
}

void Trainer::build_layer_hooks() {
  fwd_hook_ = nullptr;
  bwd_hook_ = nullptr;
  const bool layer_events = config_.layer_events;
  if (layer_events) {
    bwd_hook_ = [this](int layer, bool begin) { layer_event(core::EventKind::LayerBackward, layer, begin); };
  }
  if (zero_ != nullptr || layer_events) {
    fwd_hook_ = [this, layer_events](int layer, bool begin) {
      if (begin && zero_ != nullptr) zero_->await_layer(layer, current_step_);  // before the event starts
      if (layer_events) layer_event(core::EventKind::LayerForward, layer, begin);
    };
  }
}

void Trainer::finish_param_gather() const {
  if (zero_ != nullptr && zero_->gather_pending()) zero_->wait_gather(current_step_);
}

void Trainer::record_forward(std::int64_t step, std::int64_t begin_ns, std::int64_t end_ns) {
  std::int64_t at = begin_ns;
  if (zero_ != nullptr) {
    for (const auto& [wb, we] : zero_->forward_waits()) {
      if (wb < at || we > end_ns) continue;
      events_.record(core::EventKind::Forward, step, -1, at, wb);
      at = we;
    }
    zero_->clear_forward_waits();
  }
  events_.record(core::EventKind::Forward, step, -1, at, end_ns);
}

void Trainer::build_host_state() {
  device_state_ = optimizer_->state_buffers();
  const bool sharded = config_.shard != zero::ShardMode::None;
  host_state_ = HostState{};
  host_state_.param_count = model_.flat_count();
  sharded_host_state_ = HostState{};
  full_state_mirror_ = core::HostBuffer<float>();
  if (on_host_) {
    host_state_.params = model_.param_data();  // CpuOps: the live buffers are host memory
    if (!sharded) host_state_.optimizer = device_state_;
  } else {
    const std::int64_t n = model_.flat_count();
    host_mirror_.resize(n * static_cast<std::int64_t>(1 + (sharded ? 0 : device_state_.size())));
    host_state_.params = host_mirror_.data();
    for (std::size_t i = 0; !sharded && i < device_state_.size(); ++i) {
      host_state_.optimizer.push_back(
          {device_state_[i].name, host_mirror_.data() + n * static_cast<std::int64_t>(i + 1), device_state_[i].count});
    }
  }
  // Sharded: each rank's optimizer state is its own shard, so only parameters (and the step count)
  // are compared across ranks.
  divergence_ = std::make_unique<DivergenceCheck>(comm_, model_.params(), host_state_.params, host_state_.optimizer);
}

void Trainer::build_sync() {
  finish_param_gather();
  zero_ = nullptr;
  sync_.reset();
  model_.set_grad_placement(nullptr);  // the flat gradient buffer back, if a gradient pool had it
  if (config_.shard == zero::ShardMode::None) {
    sync_ = make_grad_sync(config_.strategy, comm_, model_.params(), model_.grad_view(), events_, config_.sync_options,
                           config_.compression, ops_, config_.seed);
    build_layer_hooks();
    return;
  }
  // The sharded sync reduce-scatters fp32 buckets; compressing them (16-bit reduce-scatter, PowerSGD
  // of a shard) is not built: refuse the pair rather than silently send fp32.
  MDDP_USAGE_CHECK(config_.compression.mode == "none",
                   "--shard " << zero::shard_mode_name(config_.shard) << " with --grad-compression "
                              << config_.compression.mode << " is not supported (use one or the other)");
  // With a gradient pool backward writes into the sync's bucket slots and the flat gradient buffer
  // is freed.
  const bool pool = zero::uses_grad_pool(config_.shard, config_.accum_steps);
  auto z = zero::make_zero_sync(config_.shard, config_.strategy, config_.sync_options, comm_, model_.params(),
                                model_.grad_view(), model_.param_view(), ops_, events_, pool);
  MDDP_CHECK(
      z->plan().state_count() == optimizer_->state_count(),
      "shard plan of " << z->plan().state_count() << " elements for optimizer state of " << optimizer_->state_count());
  zero_ = z.get();
  if (pool) model_.set_grad_placement(zero_);
  sync_ = std::move(z);
  build_layer_hooks();
}

void Trainer::set_strategy(Strategy strategy, const GradSyncOptions& options) {
  set_strategy(strategy, options, config_.shard, config_.compression);
}

void Trainer::set_strategy(Strategy strategy, const GradSyncOptions& options, zero::ShardMode shard) {
  set_strategy(strategy, options, shard, config_.compression);
}

void Trainer::set_strategy(Strategy strategy, const GradSyncOptions& options,
                           const GradCompressionConfig& compression) {
  set_strategy(strategy, options, config_.shard, compression);
}

void Trainer::set_strategy(Strategy strategy, const GradSyncOptions& options, zero::ShardMode shard,
                           const GradCompressionConfig& compression) {
  finish_param_gather();
  comm_.synchronize();
  TrainConfig next = config_;
  next.strategy = strategy;
  next.sync_options = options;
  next.shard = shard;
  next.compression = compression;  // a compressor's state (Q, error buffers) starts fresh
  const bool relayout =
      shard != config_.shard ||
      (shard != zero::ShardMode::None &&
       zero::plan_for_strategy(strategy, options, model_.params(), model_.flat_count(), comm_.size(), comm_.rank())
               .state_count() != optimizer_->state_count()) ||
      (shard != zero::ShardMode::None && strategy != config_.strategy) ||
      (shard != zero::ShardMode::None && !(options.bucket_mb == config_.sync_options.bucket_mb &&
                                           options.first_bucket_mb == config_.sync_options.first_bucket_mb));
  if (!relayout) {
    config_ = next;
    build_sync();
    return;
  }
  // The optimizer state moves to the new layout through a full host copy (collective when sharded).
  state_to_host();
  const HostState& old_view = host_state();
  std::vector<std::vector<float>> full;
  for (const auto& b : old_view.optimizer) full.emplace_back(b.data, b.data + b.count);
  const std::int64_t steps = optimizer_->steps_taken();
  config_ = next;
  optimizer_ = model::make_optimizer(config_.optimizer, optimizer_state_count(config_, comm_, model_), ops_);
  optimizer_->set_steps_taken(steps);
  build_host_state();
  build_sync();
  const HostState& view = host_state();
  for (std::size_t i = 0; i < view.optimizer.size(); ++i) {
    std::memcpy(view.optimizer[i].data, full[i].data(), full[i].size() * sizeof(float));
  }
  state_from_host();
}

zero::MemoryReport Trainer::memory_report() const {
  constexpr std::int64_t kF = sizeof(float);
  zero::MemoryReport m;
  m.parameters = model_.param_buffer().count() * kF;
  m.gradients = model_.grad_buffer().count() * kF;  // 0 when a ZeRO-2 gradient pool replaced it
  for (const auto& b : device_state_) m.optimizer_state += b.count * kF;
  if (zero_ != nullptr) {
    m.reduced_gradients = zero_->reduced_grad_bytes();
    m.comm_buffers = zero_->pool_bytes();
  }
  m.activations = model_.activation_bytes();
  m.host_staging = (host_mirror_.count() + full_state_mirror_.count()) * kF;
  return m;
}

void Trainer::layer_event(core::EventKind kind, int layer, bool begin) {
  if (begin) {
    layer_begin_ns_ = core::now_ns();
  } else {
    events_.record(kind, current_step_, layer, layer_begin_ns_, core::now_ns());
  }
}

void Trainer::verify_config_across_ranks() {
  // Every configuration field the table marks `agree`, then what the run derives from the command
  // line and the machine, each as one integer (train_config_fields.hpp: field_code).
  struct Entry {
    std::string_view name;
    std::int64_t code;
    const ConfigField* field;  // nullptr: not a configuration field, the code is the value
  };
  auto hash_str = [](std::string_view s) { return static_cast<std::int64_t>(fnv1a64(s.data(), s.size())); };
  std::vector<Entry> fields;
  for (const auto& f : train_config_fields()) {
    if (f.rules.agree) fields.push_back({f.name, field_code(f, config_), &f});
  }
  fields.push_back({"param_count", model_.flat_count(), nullptr});
  fields.push_back({"communicator (name hash)", hash_str(comm_.name()), nullptr});
  fields.push_back({"device (0 cpu, 1 cuda)", static_cast<std::int64_t>(ops_.device()), nullptr});
  auto text = [](const Entry& e, std::int64_t code) {
    return e.field ? code_text(*e.field, code) : std::to_string(code);
  };

  const auto n = static_cast<std::int64_t>(fields.size());
  std::vector<std::int64_t> mine(fields.size());
  for (std::size_t i = 0; i < fields.size(); ++i) mine[i] = fields[i].code;
  std::vector<std::int64_t> all(fields.size() * static_cast<std::size_t>(comm_.size()));
  // The field count itself is compared first, so a different build cannot misalign the exchange.
  std::int64_t count_mine = n, count_max = 0, count_min = 0;
  comm_.all_reduce(core::TensorView::of(&count_mine, 1), core::TensorView::of(&count_max, 1), comm::ReduceOp::Max);
  comm_.all_reduce(core::TensorView::of(&count_mine, 1), core::TensorView::of(&count_min, 1), comm::ReduceOp::Min);
  MDDP_AGREED_USAGE_CHECK(count_max == count_min, "ranks run different microddp builds (configuration has "
                                                      << count_min << " vs " << count_max << " fields)");
  comm_.all_gather(core::TensorView::of(mine.data(), n), core::TensorView::of(all.data(), n * comm_.size()));
  for (int r = 1; r < comm_.size(); ++r) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const std::int64_t v0 = all[i], vr = all[static_cast<std::size_t>(r) * fields.size() + i];
      MDDP_AGREED_USAGE_CHECK(v0 == vr, "configuration mismatch: rank "
                                            << r << " has " << fields[i].name << " = " << text(fields[i], vr)
                                            << " but rank 0 has " << text(fields[i], v0)
                                            << " (all ranks must be started with the same options)");
    }
  }
}

void Trainer::params_to_host() const {
  finish_param_gather();
  if (!on_host_) model_.param_buffer().to_host(host_state_.params, 0, model_.flat_count());
}

const Trainer::HostState& Trainer::host_state() const {
  finish_param_gather();  // a loader writes the parameters through this view
  if (config_.shard == zero::ShardMode::None) return host_state_;
  if (sharded_host_state_.params == nullptr) {  // first use: the full-size host staging
    const std::int64_t n = model_.flat_count();
    full_state_mirror_.resize(n * static_cast<std::int64_t>(device_state_.size()));
    sharded_host_state_.params = host_state_.params;
    sharded_host_state_.param_count = n;
    for (std::size_t i = 0; i < device_state_.size(); ++i) {
      sharded_host_state_.optimizer.push_back(
          {device_state_[i].name, full_state_mirror_.data() + n * static_cast<std::int64_t>(i), n});
    }
  }
  return sharded_host_state_;
}

void Trainer::state_to_host() const {
  params_to_host();
  if (zero_ == nullptr) {
    for (std::size_t i = 0; !on_host_ && i < device_state_.size(); ++i) {
      ops_.copy_to_host(host_state_.optimizer[i].data, device_state_[i].data,
                        static_cast<std::size_t>(device_state_[i].count) * sizeof(float));
    }
    return;
  }
  // Sharded: assemble each full state buffer in device scratch (every rank's chunks by one in-place
  // all-gather per bucket; the tails, identical on every rank, from this rank's copy), then copy it
  // to the host staging. Every rank ends with the full state: the parallel HDF5 writer needs it on
  // every rank, the serial one on rank 0 (an all-gather costs the same time as a gather to one rank
  // on a ring). The scratch lives only for this call.
  const HostState& view = host_state();
  const zero::ShardPlan& plan = zero_->plan();
  const std::int64_t n = model_.flat_count();
  kernels::OpsBuffer<float> scratch(ops_, n);
  for (std::size_t i = 0; i < device_state_.size(); ++i) {
    const float* shard = device_state_[i].data;
    for (const zero::ShardBucket& s : plan.buckets) {
      if (s.chunk > 0) ops_.copy(scratch.data() + s.own_offset(plan.rank), shard + s.chunk_state, s.chunk);
      if (s.tail > 0) ops_.copy(scratch.data() + s.tail_offset(plan.world), shard + s.tail_state, s.tail);
    }
    ops_.synchronize();
    for (const zero::ShardBucket& s : plan.buckets) {
      if (s.chunk == 0) continue;
      const core::TensorView all = scratch.view().slice(s.offset, s.chunk * plan.world);
      comm_.all_gather(all.slice(plan.rank * s.chunk, s.chunk), all);
    }
    comm_.synchronize();
    ops_.copy_to_host(view.optimizer[i].data, scratch.data(), static_cast<std::size_t>(n) * sizeof(float));
  }
}

void Trainer::state_from_host() {
  finish_param_gather();
  if (!on_host_) model_.param_buffer().from_host(host_state_.params, 0, model_.flat_count());
  if (zero_ == nullptr) {
    for (std::size_t i = 0; !on_host_ && i < device_state_.size(); ++i) {
      ops_.copy_from_host(device_state_[i].data, host_state_.optimizer[i].data,
                          static_cast<std::size_t>(device_state_[i].count) * sizeof(float));
    }
    return;
  }
  // Sharded: this rank's chunks and the tails, taken from the full host state.
  const HostState& view = host_state();
  const zero::ShardPlan& plan = zero_->plan();
  for (std::size_t i = 0; i < device_state_.size(); ++i) {
    const float* full = view.optimizer[i].data;
    for (const zero::ShardBucket& s : plan.buckets) {
      if (s.chunk > 0) {
        ops_.copy_from_host(device_state_[i].data + s.chunk_state, full + s.own_offset(plan.rank),
                            static_cast<std::size_t>(s.chunk) * sizeof(float));
      }
      if (s.tail > 0) {
        ops_.copy_from_host(device_state_[i].data + s.tail_state, full + s.tail_offset(plan.world),
                            static_cast<std::size_t>(s.tail) * sizeof(float));
      }
    }
  }
}

std::uint64_t Trainer::param_checksum() const {
  params_to_host();
  return fnv1a64(host_state_.params, static_cast<std::size_t>(model_.flat_count()) * sizeof(float));
}

void Trainer::verify_state_across_ranks(const char* when, std::int64_t step) {
  // GPU: refresh the mirror the check reads (sharded: parameters only, see build_host_state()).
  if (zero_ == nullptr) {
    state_to_host();
  } else {
    params_to_host();
  }
  divergence_->verify(when, step, optimizer_->steps_taken());
}

void Trainer::check_divergence() {
  if (last_checked_steps_ == steps_done_) return;
  const std::int64_t t0 = core::now_ns();
  verify_state_across_ranks("after step", steps_done_);  // allocates nothing unless ranks differ
  last_checked_steps_ = steps_done_;
  ++checks_done_;
  check_ms_total_ += static_cast<double>(core::now_ns() - t0) * 1e-6;
}

void Trainer::set_data_source(const data::DataSource& source) {
  MDDP_USAGE_CHECK(
      source.in_dim() == config_.model.in_dim && source.classes() == config_.model.classes,
      "data source " << source.describe() << " has " << source.in_dim() << " features and " << source.classes()
                     << " classes but the model expects " << config_.model.in_dim << " and " << config_.model.classes
                     << " (give matching --in-dim / --classes, or leave them out to take them from the file)");
  source_ = &source;
}

void Trainer::restore_progress(std::int64_t steps_done, std::int64_t optimizer_steps) {
  optimizer_->set_steps_taken(optimizer_steps);
  restore_progress(steps_done);
}

void Trainer::restore_progress(std::int64_t steps_done) {
  MDDP_CHECK(steps_done >= 0, "bad restored step count " << steps_done);
  steps_done_ = steps_done;
  verify_state_across_ranks("after loading the checkpoint of step", steps_done);
  last_checked_steps_ = steps_done_;
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
  verify_state_across_ranks("after the initial broadcast", -1);
  comm_.check_sync("sync check at start-up");  // every set-up collective matched on every rank
}

void Trainer::handle_nonfinite(std::int64_t step, bool loss_bad, bool grad_bad) {
  // Rare path (allocates): name the ranks that saw a non-finite loss / gradient. Every rank comes
  // here at the same step (the verdict was all-reduced) and gathers the same flags.
  std::int64_t mine[2] = {loss_bad ? 1 : 0, grad_bad ? 1 : 0};
  comm_.all_gather(core::TensorView::of(mine, 2), core::TensorView::of(nonfinite_all_.data(), 2 * comm_.size()));
  std::ostringstream loss_ranks, grad_ranks;
  int nl = 0, ng = 0;
  for (int r = 0; r < comm_.size(); ++r) {
    if (nonfinite_all_[2 * static_cast<std::size_t>(r)] != 0) loss_ranks << (nl++ ? ", " : "") << r;
    if (nonfinite_all_[2 * static_cast<std::size_t>(r) + 1] != 0) grad_ranks << (ng++ ? ", " : "") << r;
  }
  std::ostringstream msg;
  msg << "non-finite values at step " << step + 1 << ": loss non-finite on rank(s) " << (nl ? loss_ranks.str() : "none")
      << "; synchronised gradient non-finite on rank(s) " << (ng ? grad_ranks.str() : "none");
  if (ng > 0 && config_.compression.mode == "fp16") {
    // The fp16 wire format's range safety (ddp/compression/wire16_compressor.hpp): no clipping, no
    // silent saturation; an overflow is an infinity in the all-reduced data, hence on every rank.
    msg << " (with --grad-compression fp16 this includes gradient values or sums beyond fp16's range, |x| > 65504: "
           "use --grad-compression bf16, which has fp32's range)";
  }
  if (config_.on_nan == NanPolicy::Skip) {
    ++skipped_steps_;
    msg << "; update skipped (--on-nan skip; " << skipped_steps_ << " skipped so far)";
    if (comm_.rank() == 0) MDDP_WARN(msg.str());
    return;
  }
  msg << " (--on-nan abort; --on-nan skip would skip such steps)";
  throw core::AgreedError(msg.str());
}

void Trainer::flip_parameter_bit(const std::string& name) {
  finish_param_gather();
  for (const auto& p : model_.params()) {
    if (p.name != name) continue;
    float x = 0.0f;  // one element through explicit copies: works on every device
    model_.param_buffer().to_host(&x, p.offset, 1);
    x = std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) ^ 1u);  // lowest mantissa bit
    model_.param_buffer().from_host(&x, p.offset, 1);
    return;
  }
  MDDP_CHECK(false, "fault point " << trainer_fault_point::kPerturbParameter
                                   << " (MICRODDP_FAULT_PERTURB) names no parameter '" << name << "'");
}

void Trainer::record_device_phases(std::int64_t step, std::int64_t micro_steps) {
  for (std::int64_t k = 0; k < micro_steps; ++k) {
    if (k >= kTimedMicroSteps && k + 1 < micro_steps) continue;  // not timed (see kTimedMicroSteps)
    const MicroMarks& m = micro_marks_[static_cast<std::size_t>(k)];
    events_.record(core::EventKind::Forward, step, -1, ops_.mark_ns(m.forward_begin), ops_.mark_ns(m.forward_end));
    events_.record(core::EventKind::Backward, step, -1, ops_.mark_ns(m.backward_begin), ops_.mark_ns(m.backward_end));
  }
  if (optimizer_pending_) {  // the previous step's optimizer ran in this step's interval (see trainer.hpp)
    events_.record(core::EventKind::Optimizer, step, -1, ops_.mark_ns(optimizer_marks_[0]),
                   ops_.mark_ns(optimizer_marks_[1]));
    optimizer_pending_ = false;
  }
}

StepRecord Trainer::step() {
  const std::int64_t step = steps_done_;
  current_step_ = step;
  if (!config_.keep_events) events_.clear();
  const std::int64_t step_begin = core::now_ns();
  const std::int64_t micro_steps = config_.accum_steps;
  const float loss_scale = 1.0f / static_cast<float>(micro_steps * config_.global_batch);
  for (std::int64_t k = 0; k < micro_steps; ++k) micro_step(step, k, loss_scale);
  {
    OpsRange r(ops_, "gradient sync wait");
    sync_->finish();  // host backends wait here; stream-ordered ones order the compute stream instead
  }
  if (sync_->compressor() != nullptr) {  // its work is spread over the sync: recorded as one total
    const std::int64_t end = core::now_ns();
    events_.record(core::EventKind::Compress, step, -1, end - sync_->compression_ns(), end);
  }
  if (fault_at(trainer_fault_point::kNanGradient, step) != nullptr) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    if (zero_ == nullptr) {
      model_.grad_buffer().from_host(&nan, 0, 1);
    } else if (!zero_->segments().empty()) {  // this rank's synchronised gradient is its shard
      ops_.copy_from_host(zero_->segments().front().grad, &nan, sizeof(float));
    }
  }
  const std::int64_t loss_begin = core::now_ns();
  reduce_loss_and_numerics(micro_steps);  // the step's one host synchronisation
  sync_->complete(ops_.mark_ns(micro_marks_.back().backward_end));
  if (!on_host_) record_device_phases(step, micro_steps);
  events_.record(core::EventKind::LossSync, step, -1, loss_begin, core::now_ns());
  // host_numerics_ = [global loss, ranks with a bad loss, ranks with a bad gradient, sum of squares,
  // this rank's loss, loss bad, gradient bad] (see trainer.hpp).
  const double* h = host_numerics_.data();
  const bool nonfinite = h[1] != 0.0 || h[2] != 0.0;
  if (nonfinite) handle_nonfinite(step, h[5] != 0.0, h[6] != 0.0);  // throws under --on-nan abort
  const double grad_norm = std::sqrt(h[3]);
  if (!nonfinite) update(grad_norm);
  if (zero_ != nullptr) zero_->end_step(ops_);
  if (const core::ArmedFault* f = fault_at(trainer_fault_point::kPerturbParameter, step)) flip_parameter_bit(f->arg);
  events_.record(core::EventKind::Step, step, -1, step_begin, core::now_ns());
  ++steps_done_;
  periodic_checks();
  return StepRecord{step, h[0], grad_norm, nonfinite};
}

void Trainer::micro_step(std::int64_t step, std::int64_t k, float loss_scale) {
  const std::int64_t rows = sampler_.local_count();
  const bool last = k + 1 == config_.accum_steps;
  const bool timed = on_host_ || k < kTimedMicroSteps || last;
  MicroMarks& marks = micro_marks_[static_cast<std::size_t>(timed ? k : 0)];
  {
    core::ScopedEvent e(events_, core::EventKind::Data, step);
    OpsRange r(ops_, "data");
    // CPU: straight into the model's input buffer. GPU: into pinned staging, then one queued
    // upload each (the staging is free again: the previous step's synchronisation waited for its
    // uploads).
    float* x = on_host_ ? model_.input() : host_input_.data();
    source_->fill(sampler_.first_sample(step * config_.accum_steps + k), rows, x, labels_.data());
    if (k == 0 && fault_at(trainer_fault_point::kNanInput, step) != nullptr)
      x[0] = std::numeric_limits<float>::quiet_NaN();
    if (!on_host_) {
      ops_.copy_from_host_async(model_.input(), x,
                                static_cast<std::size_t>(rows * config_.model.in_dim) * sizeof(float));
      ops_.copy_from_host_async(device_labels_.data(), labels_.data(),
                                static_cast<std::size_t>(rows) * sizeof(std::int32_t));
    }
  }
  {
    OpsRange r(ops_, "forward");
    if (timed) marks.forward_begin = ops_.mark();
    model_.forward(model_.input(), rows, fwd_hook_);
    if (timed) marks.forward_end = ops_.mark();
    // CPU marks are host times, known now (GPU: recorded after the synchronisation).
    if (on_host_) record_forward(step, ops_.mark_ns(marks.forward_begin), ops_.mark_ns(marks.forward_end));
  }
  // Only the last micro-step synchronises: the others just accumulate local gradients (no
  // grad_ready hook, so no collectives at all).
  if (last) sync_->on_backward_begin(step);
  {
    OpsRange r(ops_, "backward");
    if (timed) marks.backward_begin = ops_.mark();
    // The first micro-step overwrites the gradients (no zero_grad pass), later ones accumulate.
    model_.backward_into(on_host_ ? labels_.data() : device_labels_.data(), loss_scale, micro_losses_.data() + k,
                         last ? grad_ready_hook_ : no_ready_hook_, bwd_hook_, /*accumulate=*/k > 0);
    if (timed) marks.backward_end = ops_.mark();
    if (on_host_) {
      events_.record(core::EventKind::Backward, step, -1, ops_.mark_ns(marks.backward_begin),
                     ops_.mark_ns(marks.backward_end));
    }
  }
}

void Trainer::reduce_loss_and_numerics(std::int64_t micro_steps) {
  OpsRange r(ops_, "loss sync and numerics");
  // The numerics verdict rides in the loss all-reduce (no extra collective): a local check alone
  // could differ between ranks (e.g. a NaN in one rank's copy only), the all-reduced counts cannot.
  double* num = numerics_.data();
  if (zero_ == nullptr) {
    ops_.sum_squares_to(model_.grad_data(), model_.flat_count(), num + 3);
  } else {
    // Sharded: the global sum of squares is the sum of the shards' (the replicated tails counted
    // on rank 0 only): one more small all-reduce (the verdict below needs the global value).
    const double mine = shard_sum_squares();
    ops_.copy_from_host(num + 3, &mine, sizeof(double));
    comm_.all_reduce(core::TensorView::of(num + 3, 1, model_.device()), comm::ReduceOp::Sum);
  }
  ops_.step_numerics(micro_losses_.data(), micro_steps, num + 3, num);      // all-reduced below
  ops_.step_numerics(micro_losses_.data(), micro_steps, num + 3, num + 4);  // this rank's own
  const core::TensorView verdict = core::TensorView::of(num, 3, model_.device());
  if (comm_.completes_in_stream_order() && !on_host_) {
    const comm::Work w = comm_.all_reduce(verdict, comm::ReduceOp::Sum, comm::Mode::Async);
    comm_.order_compute_after(w);
    ops_.copy_to_host_async(host_numerics_.data(), num, 7 * sizeof(double));
    ops_.synchronize();  // the step's one host synchronisation (reports device-flagged bad labels)
    w.wait();            // complete already: surfaces a communicator error
  } else {
    comm_.all_reduce(verdict, comm::ReduceOp::Sum);
    ops_.copy_to_host_async(host_numerics_.data(), num, 7 * sizeof(double));
    ops_.synchronize();
  }
}

double Trainer::shard_sum_squares() const {
  double sum = 0.0;  // fixed segment order: deterministic
  for (const zero::ShardSegment& seg : zero_->segments()) {
    if (seg.in_norm) sum += ops_.sum_squares(seg.grad, seg.count);
  }
  return sum;
}

void Trainer::update_sharded(double grad_norm) {
  if (config_.clip_grad_norm > 0.0f) {
    // Same global norm on every rank => same factor for every shard.
    const double factor = clip_factor(grad_norm, static_cast<double>(config_.clip_grad_norm));
    if (factor < 1.0) {
      for (const zero::ShardSegment& seg : zero_->segments())
        ops_.scale(seg.grad, static_cast<float>(factor), seg.count);
    }
  }
  optimizer_->begin_step();
  // Bucket by bucket, last bucket first (it holds layer 0, which the next forward needs first):
  // update the shard, then start its all-gather while the next bucket updates.
  for (std::size_t b = zero_->plan().buckets.size(); b-- > 0;) {
    const auto [first, end] = zero_->segments_of(b);
    for (std::size_t i = first; i < end; ++i) {
      const zero::ShardSegment& seg = zero_->segments()[i];
      optimizer_->update_range(model_.param_data() + seg.param_offset, seg.grad, seg.state_offset, seg.count);
    }
    zero_->launch_gather(b);
  }
  // No wait: the next forward waits layer by layer (ZeroSync::await_layer), anything else that
  // reads the parameters first (finish_param_gather).
}

void Trainer::update(double grad_norm) {
  OpsRange r(ops_, "optimizer");
  optimizer_marks_[0] = ops_.mark();
  if (zero_ != nullptr) {
    update_sharded(grad_norm);
  } else if (config_.clip_grad_norm > 0.0f) {
    // Same gradient bits on every rank => same norm and factor; applied before the update.
    const double factor = clip_factor(grad_norm, static_cast<double>(config_.clip_grad_norm));
    if (factor < 1.0) ops_.scale(model_.grad_data(), static_cast<float>(factor), model_.flat_count());
  }
  if (zero_ == nullptr) optimizer_->step(model_.param_data(), model_.grad_data());
  optimizer_marks_[1] = ops_.mark();
  if (on_host_) {
    events_.record(core::EventKind::Optimizer, current_step_, -1, ops_.mark_ns(optimizer_marks_[0]),
                   ops_.mark_ns(optimizer_marks_[1]));
  } else {
    optimizer_pending_ = true;  // queued: resolved at the next synchronisation
  }
}

void Trainer::periodic_checks() {
  // Desync first: a divergence check over mismatched collectives could itself hang or mislead.
  if (config_.sync_check_every > 0 && steps_done_ % config_.sync_check_every == 0) {
    comm_.check_sync("sync check at", steps_done_);
  }
  if (config_.check_every > 0 && steps_done_ % config_.check_every == 0) check_divergence();
}

}  // namespace microddp::ddp
