// zero_sync.cpp — per-bucket reduce-scatter from grad-ready, per-bucket all-gather after the update.
#include "ddp/zero/zero_sync.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/error.hpp"

namespace microddp::ddp::zero {

ZeroSync::ZeroSync(ShardMode mode, Strategy base_strategy, ShardPlan plan, comm::Communicator& comm,
                   const std::vector<model::ParamInfo>& params, core::TensorView grads, core::TensorView param_view,
                   kernels::Ops& ops, core::EventLog& events, bool grad_pool)
    : GradSync(comm, params, grads, events),
      ops_(ops),
      mode_(mode),
      base_strategy_(base_strategy),
      name_(std::string(strategy_name(base_strategy)) + "+shard=" + std::string(shard_mode_name(mode))),
      plan_(std::move(plan)),
      params_view_(param_view),
      bucket_of_(params.size(), -1),
      pending_(plan_.buckets.size(), 0),
      rs_work_(plan_.buckets.size()),
      tail_work_(plan_.buckets.size()),
      ag_work_(plan_.buckets.size()),
      rs_launch_ns_(plan_.buckets.size(), 0),
      ag_launch_ns_(plan_.buckets.size(), 0) {
  MDDP_CHECK(mode != ShardMode::None, "ZeroSync needs a shard mode");
  MDDP_CHECK(plan_.world == comm.size() && plan_.rank == comm.rank() && plan_.flat_count == grads.count &&
                 param_view.count == grads.count,
             "shard plan for rank " << plan_.rank << " of " << plan_.world << " over " << plan_.flat_count
                                    << " elements does not fit this communicator / model");
  MDDP_CHECK(!grad_pool || mode == ShardMode::Gradients, "a gradient pool needs --shard gradients");
  if (mode == ShardMode::Gradients) store_ = kernels::OpsBuffer<float>(ops, plan_.state_count());
  if (grad_pool) {
    pool_slots_ = pool_slots(plan_);
    slot_count_ = pool_count(plan_) / pool_slots_;
    pool_ = kernels::OpsBuffer<float>(ops, pool_count(plan_));
    grads_.data = nullptr;  // the model frees its flat gradient buffer: a stray use must fail loudly
    for (const ShardBucket& s : plan_.buckets) {
      auto& gaps = padding_.emplace_back();
      std::int64_t at = s.offset;  // parameters are in flat-buffer order within a bucket
      for (int p = s.bucket.first_param; p < s.bucket.end_param; ++p) {
        const model::ParamInfo& info = params[static_cast<std::size_t>(p)];
        if (info.offset > at) gaps.emplace_back(at - s.offset, info.offset - s.offset);
        at = info.offset + info.count;
      }
      if (s.offset + s.count > at) gaps.emplace_back(at - s.offset, s.count);
    }
  }
  float* full = static_cast<float*>(grads.data);
  float* shard = store_.data();
  seg_begin_.push_back(0);
  synced_count_ = 0;
  for (const ShardBucket& s : plan_.buckets) {
    for (int p = s.bucket.first_param; p < s.bucket.end_param; ++p)
      bucket_of_[static_cast<std::size_t>(p)] = s.bucket.index;
    if (s.chunk > 0) {
      float* g = mode == ShardMode::Gradients ? shard + s.chunk_state : full + s.offset;  // in place: block 0's place
      segments_.push_back({s.own_offset(plan_.rank), g, s.chunk_state, s.chunk, true});
    }
    if (s.tail > 0) {
      float* g = mode == ShardMode::Gradients ? shard + s.tail_state : full + s.tail_offset(plan_.world);
      segments_.push_back({s.tail_offset(plan_.world), g, s.tail_state, s.tail, plan_.rank == 0});
    }
    seg_begin_.push_back(segments_.size());
    synced_count_ += s.count;
  }
  for (std::size_t p = 0; p < bucket_of_.size(); ++p) {
    MDDP_CHECK(bucket_of_[p] >= 0, "shard plan does not cover parameter " << params_[p].name);
    const auto layer = static_cast<std::size_t>(params[p].layer);
    if (layer_buckets_.size() <= layer) layer_buckets_.resize(layer + 1);
    auto& lb = layer_buckets_[layer];
    const auto b = static_cast<std::size_t>(bucket_of_[p]);
    if (std::find(lb.begin(), lb.end(), b) == lb.end()) lb.push_back(b);
  }
  gathered_.assign(plan_.buckets.size(), 1);
  forward_waits_.reserve(plan_.buckets.size());
}

int ZeroSync::pool_slots(const ShardPlan& plan) {
  return static_cast<int>(std::min<std::size_t>(kPoolSlots, std::max<std::size_t>(1, plan.buckets.size())));
}

std::int64_t ZeroSync::pool_count(const ShardPlan& plan) {
  std::int64_t largest = 0;
  for (const ShardBucket& s : plan.buckets) largest = std::max(largest, s.count);
  return pool_slots(plan) * largest;
}

core::TensorView ZeroSync::bucket_grads(std::size_t b) {
  const ShardBucket& s = plan_.buckets[b];
  if (pool_.count() == 0) return grad_slice(s.offset, s.count);
  const auto slot = static_cast<std::int64_t>(b % static_cast<std::size_t>(pool_slots_));
  return pool_.view().slice(slot * slot_count_, s.count);
}

void ZeroSync::wait_bucket(std::size_t b) {
  const ShardBucket& s = plan_.buckets[b];
  if (stream_ordered()) {  // one FIFO communication stream: the bucket's last collective orders both
    const comm::Work& last = s.tail > 0 ? tail_work_[b] : rs_work_[b];
    if (s.tail > 0 || s.chunk > 0) comm_.order_compute_after(last);
    return;
  }
  const std::int64_t begin = core::now_ns();
  rs_work_[b].wait();
  tail_work_[b].wait();
  events_.record(core::EventKind::CommWait, step_, static_cast<std::int32_t>(b), begin, core::now_ns());
}

float* ZeroSync::acquire(const model::ParamInfo& param) {
  MDDP_CHECK(pool_.count() > 0, name_ << ": acquire() without a gradient pool");
  const auto b = static_cast<std::size_t>(bucket_of_[static_cast<std::size_t>(param.index)]);
  const ShardBucket& s = plan_.buckets[b];
  float* slot = static_cast<float*>(bucket_grads(b).data);
  if (param.index == s.bucket.first_param) {  // bucket b takes over its slot
    const auto slots = static_cast<std::size_t>(pool_slots_);
    if (b >= slots) wait_bucket(b - slots);
    for (const auto& [begin, end] : padding_[b]) ops_.zero(slot + begin, end - begin);
  }
  return slot + (param.offset - s.offset);
}

std::int64_t ZeroSync::collectives_per_step() const {
  std::int64_t n = 0;
  for (const ShardBucket& s : plan_.buckets) n += (s.chunk > 0 ? 2 : 0) + (s.tail > 0 ? 1 : 0);
  return n;
}

std::int64_t ZeroSync::gather_bytes_per_step() const {
  std::int64_t n = 0;
  for (const ShardBucket& s : plan_.buckets) n += s.chunk * plan_.world;
  return n * static_cast<std::int64_t>(sizeof(float));
}

void ZeroSync::on_backward_begin(std::int64_t step) {
  GradSync::on_backward_begin(step);
  for (const ShardBucket& s : plan_.buckets) pending_[static_cast<std::size_t>(s.bucket.index)] = s.bucket.num_params();
  next_launch_ = 0;
}

void ZeroSync::on_grad_ready(const model::ParamInfo& param) {
  GradSync::on_grad_ready(param);
  --pending_[static_cast<std::size_t>(bucket_of_[static_cast<std::size_t>(param.index)])];
  while (next_launch_ < plan_.buckets.size() && pending_[next_launch_] == 0) launch(next_launch_++);
}

void ZeroSync::launch(std::size_t b) {
  const ShardBucket& s = plan_.buckets[b];
  rs_launch_ns_[b] = core::now_ns();
  // Every rank skips the same empty collectives (the plan is identical everywhere).
  const core::TensorView grads = bucket_grads(b);  // the widened slice, in the flat buffer or a pool slot
  if (s.chunk > 0) {
    const core::TensorView send = grads.slice(0, s.chunk * plan_.world);
    const core::TensorView recv =
        mode_ == ShardMode::Gradients ? store_.view().slice(s.chunk_state, s.chunk) : grads.slice(0, s.chunk);
    rs_work_[b] = comm_.reduce_scatter(send, recv, comm::ReduceOp::Sum, comm::Mode::Async);
  }
  if (s.tail > 0) {
    const core::TensorView send = grads.slice(s.chunk * plan_.world, s.tail);
    const core::TensorView recv = mode_ == ShardMode::Gradients ? store_.view().slice(s.tail_state, s.tail) : send;
    tail_work_[b] = comm_.all_reduce(send, recv, comm::ReduceOp::Sum, comm::Mode::Async);
  }
}

void ZeroSync::finish() {
  check_all_ready();
  MDDP_CHECK(next_launch_ == plan_.buckets.size(), name_ << ": only " << next_launch_ << " of " << plan_.buckets.size()
                                                         << " buckets were launched in step " << step_);
  const std::size_t nb = plan_.buckets.size();
  if (stream_ordered()) {
    for (std::size_t b = 0; b < nb; ++b) {
      defer(plan_.buckets[b].tail > 0 ? tail_work_[b] : rs_work_[b], static_cast<std::int32_t>(b), rs_launch_ns_[b],
            plan_.buckets[b].count * static_cast<std::int64_t>(sizeof(float)));
    }
    order_compute_after_deferred();
    return;
  }
  const std::int64_t wait_begin = core::now_ns();
  for (std::size_t b = 0; b < nb; ++b) {
    rs_work_[b].wait();
    tail_work_[b].wait();
  }
  const std::int64_t wait_end = core::now_ns();
  events_.record(core::EventKind::CommWait, step_, -1, wait_begin, wait_end);
  for (std::size_t b = 0; b < nb; ++b) {
    std::int64_t done = std::max(rs_work_[b].completion_ns(), tail_work_[b].completion_ns());
    if (done == 0) done = wait_end;
    // The bucket's reduce-scatter and tail all-reduce run one after the other: it starts with the first.
    const std::int64_t rs_start = rs_work_[b].start_ns(), tail_start = tail_work_[b].start_ns();
    const std::int64_t start =
        rs_start == 0 ? tail_start : (tail_start == 0 ? rs_start : std::min(rs_start, tail_start));
    record_collective(static_cast<std::int32_t>(b), rs_launch_ns_[b], start, done,
                      plan_.buckets[b].count * static_cast<std::int64_t>(sizeof(float)));
  }
}

void ZeroSync::launch_gather(std::size_t b) {
  const std::size_t nb = plan_.buckets.size();
  MDDP_CHECK(gathers_launched_ < nb && b == nb - 1 - gathers_launched_,
             name_ << ": all-gather of bucket " << b << " launched out of order");
  ++gathers_launched_;  // (a new update before the last one's gathers were waited for fails the check above)
  gathered_[b] = 0;
  const ShardBucket& s = plan_.buckets[b];
  ag_launch_ns_[b] = core::now_ns();
  if (s.chunk == 0) {
    ag_work_[b] = comm::Work();
    return;
  }
  // In place: this rank's chunk already sits at its block of the bucket's slice.
  const core::TensorView all = params_view_.slice(s.offset, s.chunk * plan_.world);
  ag_work_[b] = comm_.all_gather(all.slice(plan_.rank * s.chunk, s.chunk), all, comm::Mode::Async);
}

void ZeroSync::wait_gather_of(std::size_t b, std::int64_t step, bool in_forward) {
  if (gathered_[b] != 0) return;
  gathered_[b] = 1;
  if (++gathers_waited_ == plan_.buckets.size()) gathers_launched_ = gathers_waited_ = 0;  // the update's last
  const ShardBucket& s = plan_.buckets[b];
  const auto id = static_cast<std::int32_t>(plan_.buckets.size() + b);
  if (stream_ordered()) {
    if (s.chunk > 0) comm_.order_compute_after(ag_work_[b]);
    return;
  }
  const std::int64_t wait_begin = core::now_ns();
  ag_work_[b].wait();
  const std::int64_t wait_end = core::now_ns();
  events_.record(core::EventKind::CommWait, step, id, wait_begin, wait_end);
  if (in_forward) forward_waits_.emplace_back(wait_begin, wait_end);
  std::int64_t done = ag_work_[b].completion_ns();
  if (done == 0) done = wait_end;
  record_collective(id, ag_launch_ns_[b], ag_work_[b].start_ns(), done,
                    s.chunk * plan_.world * static_cast<std::int64_t>(sizeof(float)), step);
}

void ZeroSync::await_layer(int layer, std::int64_t step) {
  if (!gather_pending()) return;
  MDDP_CHECK(gathers_launched_ == plan_.buckets.size(),
             name_ << ": only " << gathers_launched_ << " of " << plan_.buckets.size() << " all-gathers launched");
  if (layer >= 0 && static_cast<std::size_t>(layer) < layer_buckets_.size()) {
    for (const std::size_t b : layer_buckets_[static_cast<std::size_t>(layer)]) wait_gather_of(b, step, true);
  }
}

void ZeroSync::wait_gather(std::int64_t step) {
  if (!gather_pending()) return;
  MDDP_CHECK(gathers_launched_ == plan_.buckets.size(),
             name_ << ": only " << gathers_launched_ << " of " << plan_.buckets.size() << " all-gathers launched");
  for (std::size_t i = plan_.buckets.size(); i-- > 0;) wait_gather_of(i, step, false);  // in launch order
}

void ZeroSync::end_step(kernels::Ops& ops) {
  if (mode_ != ShardMode::Optimizer) return;
  float* full = static_cast<float*>(grads_.data);
  for (const ShardBucket& s : plan_.buckets) {
    if (s.chunk > 0) ops.zero(full + s.offset, s.chunk);
  }
}

std::string ZeroSync::collective_label(int id) const {
  const auto nb = static_cast<int>(plan_.buckets.size());
  if (id < 0 || id >= 2 * nb) return GradSync::collective_label(id);
  const bool gather = id >= nb;
  const ShardBucket& s = plan_.buckets[static_cast<std::size_t>(gather ? id - nb : id)];
  char buf[200];
  std::snprintf(buf, sizeof(buf), "%s bucket %d (%s .. %s, %.2f MiB, chunk %lld)",
                gather ? "all-gather" : "reduce-scatter", s.bucket.index,
                params_[static_cast<std::size_t>(s.bucket.first_param)].name.c_str(),
                params_[static_cast<std::size_t>(s.bucket.end_param - 1)].name.c_str(),
                static_cast<double>(s.count) * sizeof(float) / (1 << 20), static_cast<long long>(s.chunk));
  return buf;
}

std::vector<SyncUnit> ZeroSync::units() const {
  std::vector<SyncUnit> u;
  for (const ShardBucket& sb : plan_.buckets)
    u.push_back({sb.offset, sb.count, sb.bucket.first_param, sb.bucket.end_param});
  return u;
}

}  // namespace microddp::ddp::zero
