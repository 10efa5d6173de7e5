// zero_sync.cpp — per-bucket reduce-scatter from grad-ready, per-bucket all-gather after the update.
#include "ddp/zero/zero_sync.hpp"

#include <cstdio>
#include <utility>

#include "core/error.hpp"

namespace microddp::ddp::zero {

ZeroSync::ZeroSync(ShardMode mode, Strategy base_strategy, ShardPlan plan, comm::Communicator& comm,
                   const std::vector<model::ParamInfo>& params, core::TensorView grads, core::TensorView param_view,
                   kernels::Ops& ops, core::EventLog& events)
    : GradSync(comm, params, grads, events),
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
  if (mode == ShardMode::Gradients) store_ = kernels::OpsBuffer<float>(ops, plan_.state_count());
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
  }
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
  gathers_launched_ = 0;
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
  if (s.chunk > 0) {
    const core::TensorView send = grad_slice(s.offset, s.chunk * plan_.world);
    const core::TensorView recv =
        mode_ == ShardMode::Gradients ? store_.view().slice(s.chunk_state, s.chunk) : grad_slice(s.offset, s.chunk);
    rs_work_[b] = comm_.reduce_scatter(send, recv, comm::ReduceOp::Sum, comm::Mode::Async);
  }
  if (s.tail > 0) {
    const core::TensorView send = grad_slice(s.tail_offset(plan_.world), s.tail);
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
  MDDP_CHECK(b == gathers_launched_, name_ << ": all-gather of bucket " << b << " launched out of order");
  ++gathers_launched_;
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

void ZeroSync::wait_gather() {
  MDDP_CHECK(gathers_launched_ == plan_.buckets.size(),
             name_ << ": only " << gathers_launched_ << " of " << plan_.buckets.size() << " all-gathers launched");
  if (stream_ordered()) {
    for (std::size_t b = plan_.buckets.size(); b-- > 0;) {
      if (plan_.buckets[b].chunk > 0) {  // one FIFO communication stream: the last one orders all
        comm_.order_compute_after(ag_work_[b]);
        break;
      }
    }
    return;
  }
  const std::int64_t wait_begin = core::now_ns();
  for (const comm::Work& w : ag_work_) w.wait();
  const std::int64_t wait_end = core::now_ns();
  events_.record(core::EventKind::CommWait, step_, -1, wait_begin, wait_end);
  const auto nb = static_cast<std::int32_t>(plan_.buckets.size());
  for (std::size_t b = 0; b < plan_.buckets.size(); ++b) {
    std::int64_t done = ag_work_[b].completion_ns();
    if (done == 0) done = wait_end;
    record_collective(nb + static_cast<std::int32_t>(b), ag_launch_ns_[b], ag_work_[b].start_ns(), done,
                      plan_.buckets[b].chunk * plan_.world * static_cast<std::int64_t>(sizeof(float)));
  }
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
