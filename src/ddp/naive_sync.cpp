// naive_sync.cpp — per-parameter blocking all-reduce after backward.
#include "ddp/naive_sync.hpp"

namespace microddp::ddp {

std::vector<SyncUnit> NaiveSync::units() const {
  std::vector<SyncUnit> u;
  for (const auto& p : params_) u.push_back({p.offset, p.count, p.index, p.index + 1});
  return u;
}

void NaiveSync::finish() {
  check_all_ready();
  if (stream_ordered()) {  // the same collectives, queued; the compute stream waits for them
    for (const auto& p : params_) {
      const std::int64_t t0 = core::now_ns();
      defer(launch_unit(p.index, comm::Mode::Async), p.index, t0, unit_bytes(p.index));
    }
    order_compute_after_deferred();
    return;
  }
  const std::int64_t wait_begin = core::now_ns();
  for (const auto& p : params_) {
    const std::int64_t t0 = core::now_ns();
    launch_unit(p.index, comm::Mode::Sync);
    complete_unit(p.index);
    record_collective(p.index, t0, 0, core::now_ns(), unit_bytes(p.index));  // synchronous: started at t0
  }
  events_.record(core::EventKind::CommWait, step_, -1, wait_begin, core::now_ns());
}

}  // namespace microddp::ddp
