// sharded_update.cpp — step the shard, gather the parameters, and move the full state through the host.
#include "ddp/zero/sharded_update.hpp"

#include <limits>

#include "core/error.hpp"
#include "ddp/stream_order.hpp"
#include "ddp/zero/make_zero_sync.hpp"

namespace microddp::ddp::zero {

ShardedUpdate::ShardedUpdate(model::FullMLP& model, kernels::Ops& ops, const model::OptimizerConfig& config,
                             comm::Communicator& comm, ZeroSync& sync)
    : OptimizerUpdate(model, ops, model::make_optimizer(config, sync.plan().state_count(), ops)),
      comm_(comm),
      sync_(sync) {
  params_only_.params = params_.host();
  params_only_.param_count = model_.flat_count();
}

void ShardedUpdate::grad_sum_squares_to(double* out) {
  // sum_squares waits for the compute stream, which a stream-ordered communicator made wait for the
  // reduce-scatters: watch them while waiting (a hung peer must end in --comm-timeout, not a hang).
  watch_collectives_until_stream_idle(comm_, ops_);
  double mine = 0.0;  // fixed segment order: deterministic
  for (const ShardSegment& seg : sync_.segments()) {
    if (seg.in_norm) mine += ops_.sum_squares(seg.grad, seg.count);
  }
  ops_.copy_from_host(out, &mine, sizeof(double));
  comm_.all_reduce(core::TensorView::of(out, 1, model_.device()), comm::ReduceOp::Sum);
}

void ShardedUpdate::poison_gradient() {
  if (sync_.segments().empty()) return;  // this rank's synchronised gradient is its shard
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ops_.copy_from_host(sync_.segments().front().grad, &nan, sizeof(float));
}

void ShardedUpdate::apply(double clip) {
  if (clip < 1.0) {  // same global norm on every rank => same factor for every shard
    for (const ShardSegment& seg : sync_.segments()) ops_.scale(seg.grad, static_cast<float>(clip), seg.count);
  }
  optimizer_->begin_step();
  for (std::size_t b = sync_.plan().buckets.size(); b-- > 0;) {
    const auto [first, end] = sync_.segments_of(b);
    for (std::size_t i = first; i < end; ++i) {
      const ShardSegment& seg = sync_.segments()[i];
      optimizer_->update_range(model_.param_data() + seg.param_offset, seg.grad, seg.state_offset, seg.count);
    }
    sync_.launch_gather(b);
  }
}

void ShardedUpdate::finish_param_gather(std::int64_t step) const {
  if (sync_.gather_pending()) sync_.wait_gather(step);
}

const OptimizerUpdate::HostState& ShardedUpdate::host_state() const { return full_size_host_state(full_); }

void ShardedUpdate::state_to_host() const {
  params_to_host();
  // Each full state buffer is assembled in device scratch (every rank's chunks by one in-place
  // all-gather per bucket, the tails from this rank's copy), then copied to the host staging. The
  // scratch lives only for this call.
  const HostState& view = host_state();
  const ShardPlan& plan = sync_.plan();
  const std::int64_t n = model_.flat_count();
  kernels::OpsBuffer<float> scratch(ops_, n);
  for (std::size_t i = 0; i < device_state_.size(); ++i) {
    const float* shard = device_state_[i].data;
    for (const ShardBucket& s : plan.buckets) {
      if (s.chunk > 0) ops_.copy(scratch.data() + s.own_offset(plan.rank), shard + s.chunk_state, s.chunk);
      if (s.tail > 0) ops_.copy(scratch.data() + s.tail_offset(plan.world), shard + s.tail_state, s.tail);
    }
    ops_.synchronize();
    for (const ShardBucket& s : plan.buckets) {
      if (s.chunk == 0) continue;
      const core::TensorView all = scratch.view().slice(s.offset, s.chunk * plan.world);
      comm_.all_gather(all.slice(plan.rank * s.chunk, s.chunk), all);
    }
    comm_.synchronize();
    ops_.copy_to_host(view.optimizer[i].data, scratch.data(), static_cast<std::size_t>(n) * sizeof(float));
  }
}

void ShardedUpdate::state_from_host() {
  model_.params_changed();  // the CPU's view is the live buffer, written through a pointer taken earlier
  params_.from_host();
  // This rank's chunks and the tails, taken from the full host state.
  const HostState& view = host_state();
  const ShardPlan& plan = sync_.plan();
  for (std::size_t i = 0; i < device_state_.size(); ++i) {
    const float* full = view.optimizer[i].data;
    for (const ShardBucket& s : plan.buckets) {
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

void ShardedUpdate::add_memory(MemoryReport& m) const {
  OptimizerUpdate::add_memory(m);
  m.reduced_gradients += sync_.reduced_grad_bytes();
  m.comm_buffers += sync_.pool_bytes();
}

ShardedParts make_sharded(const TrainConfig& config, comm::Communicator& comm, model::FullMLP& model, kernels::Ops& ops,
                          core::EventLog& events) {
  // The sharded sync reduce-scatters fp32 buckets; compressing them (16-bit reduce-scatter, PowerSGD
  // of a shard) is not built: refuse the pair rather than silently send fp32.
  MDDP_USAGE_CHECK(config.compression.mode == CompressionMode::None,
                   "--shard " << shard_mode_name(config.shard) << " with --grad-compression "
                              << compression_mode_name(config.compression.mode)
                              << " is not supported (use one or the other)");
  // With a gradient pool backward writes into the sync's bucket slots and the flat gradient buffer
  // is freed.
  const bool pool = uses_grad_pool(config.shard, config.accum_steps);
  ShardedParts parts;
  parts.sync = make_zero_sync(config.shard, config.strategy, config.sync_options, comm, model.params(),
                              model.grad_view(), model.param_view(), ops, events, pool);
  if (pool) model.set_grad_placement(parts.sync.get());
  parts.update = std::make_unique<ShardedUpdate>(model, ops, config.optimizer, comm, *parts.sync);
  return parts;
}

}  // namespace microddp::ddp::zero
