// planned_sync.cpp — a bucket plan's all-reduces, after backward (blocking, in plan order) or during
// backward (async, launched from grad_ready in bucket order).
#include "ddp/planned_sync.hpp"

#include <cstdio>
#include <utility>

#include "core/error.hpp"

namespace microddp::ddp {

PlannedSync::PlannedSync(Strategy strategy, std::vector<Bucket> plan, Launch launch, comm::Communicator& comm,
                         const std::vector<model::ParamInfo>& params, core::TensorView grads, core::EventLog& events)
    : GradSync(comm, params, grads, events),
      strategy_(strategy),
      plan_(std::move(plan)),
      launch_(launch),
      bucket_of_(params.size(), -1),
      pending_(plan_.size(), 0),
      work_(plan_.size()),
      launch_ns_(plan_.size(), 0) {
  for (const Bucket& b : plan_) {
    MDDP_CHECK(b.offset >= 0 && b.offset + b.count <= grads.count,
               "bucket " << b.index << " [" << b.offset << ", +" << b.count << ") is outside the gradient buffer");
    for (int p = b.first_param; p < b.end_param; ++p) bucket_of_[static_cast<std::size_t>(p)] = b.index;
  }
  for (std::size_t p = 0; p < bucket_of_.size(); ++p) {
    MDDP_CHECK(bucket_of_[p] >= 0, "bucket plan does not cover parameter " << params_[p].name);
  }
  synced_count_ = 0;  // the buckets' slices (the padding inside them included)
  for (const Bucket& b : plan_) synced_count_ += b.count;
}

std::vector<SyncUnit> PlannedSync::units() const {
  std::vector<SyncUnit> u;
  for (const Bucket& b : plan_) u.push_back({b.offset, b.count, b.first_param, b.end_param});
  return u;
}

void PlannedSync::on_backward_begin(std::int64_t step) {
  GradSync::on_backward_begin(step);
  for (const Bucket& b : plan_) pending_[static_cast<std::size_t>(b.index)] = b.num_params();
  next_launch_ = 0;
}

void PlannedSync::on_grad_ready(const model::ParamInfo& param) {
  GradSync::on_grad_ready(param);  // validates the index and records the GradReady instant
  if (launch_ != Launch::DuringBackward) return;
  const auto b = static_cast<std::size_t>(bucket_of_[static_cast<std::size_t>(param.index)]);
  --pending_[b];
  // Launch every complete bucket at the front, strictly in index order.
  while (next_launch_ < plan_.size() && pending_[next_launch_] == 0) launch(next_launch_++);
}

void PlannedSync::launch(std::size_t b) {
  launch_ns_[b] = core::now_ns();
  work_[b] = launch_unit(static_cast<int>(b), comm::Mode::Async);  // with compression: its first phase
}

void PlannedSync::finish() {
  check_all_ready();
  if (launch_ == Launch::AfterBackward) {
    finish_after_backward();
  } else {
    finish_during_backward();
  }
}

void PlannedSync::finish_after_backward() {
  if (stream_ordered()) {  // the same collectives, queued; the compute stream waits for them
    for (std::size_t b = 0; b < plan_.size(); ++b) {
      const std::int64_t t0 = core::now_ns();
      const int u = static_cast<int>(b);
      defer(launch_unit(u, comm::Mode::Async), u, t0, unit_bytes(u));
    }
    order_compute_after_deferred();
    return;
  }
  const std::int64_t wait_begin = core::now_ns();
  for (std::size_t b = 0; b < plan_.size(); ++b) {
    const std::int64_t t0 = core::now_ns();
    const int u = static_cast<int>(b);
    launch_unit(u, comm::Mode::Sync);
    complete_unit(u);
    record_collective(u, t0, 0, core::now_ns(), unit_bytes(u));  // synchronous: started at t0
  }
  events_.record(core::EventKind::CommWait, step_, -1, wait_begin, core::now_ns());
}

void PlannedSync::finish_during_backward() {
  MDDP_CHECK(next_launch_ == plan_.size(), name() << ": only " << next_launch_ << " of " << plan_.size()
                                                  << " buckets were launched in step " << step_);
  if (stream_ordered()) {  // the compute stream waits for the buckets; complete() records them
    for (std::size_t b = 0; b < plan_.size(); ++b) {
      defer(work_[b], static_cast<std::int32_t>(b), launch_ns_[b], unit_bytes(static_cast<int>(b)));
    }
    order_compute_after_deferred();
    return;
  }
  const std::int64_t wait_begin = core::now_ns();
  for (const comm::Work& w : work_) w.wait();
  // Compression's second phase (PowerSGD's Q all-reduce) and decode, bucket by bucket in index order.
  for (std::size_t b = 0; b < plan_.size(); ++b) complete_unit(static_cast<int>(b));
  const std::int64_t wait_end = core::now_ns();
  events_.record(core::EventKind::CommWait, step_, -1, wait_begin, wait_end);
  for (std::size_t b = 0; b < plan_.size(); ++b) {
    std::int64_t done = work_[b].completion_ns();
    if (done == 0) done = wait_end;  // timestamp unavailable (synchronous fallback): bound it by the wait
    record_collective(static_cast<std::int32_t>(b), launch_ns_[b], work_[b].start_ns(), done,
                      unit_bytes(static_cast<int>(b)));
  }
}

std::string PlannedSync::collective_label(int id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= plan_.size()) return GradSync::collective_label(id);
  const Bucket& b = plan_[static_cast<std::size_t>(id)];
  if (b.num_params() == 1) return params_[static_cast<std::size_t>(b.first_param)].name;
  // One blocking collective for the whole buffer (flat).
  if (launch_ == Launch::AfterBackward && plan_.size() == 1) return "all gradients";
  char buf[160];
  std::snprintf(buf, sizeof(buf), "bucket %d (%s .. %s, %.2f MiB)", b.index,
                params_[static_cast<std::size_t>(b.first_param)].name.c_str(),
                params_[static_cast<std::size_t>(b.end_param - 1)].name.c_str(),
                static_cast<double>(b.bytes()) / (1 << 20));
  return buf;
}

}  // namespace microddp::ddp
