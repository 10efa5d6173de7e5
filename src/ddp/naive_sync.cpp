// naive_sync.cpp — per-parameter blocking all-reduce after backward.
#include "ddp/naive_sync.hpp"

namespace microddp::ddp {

void NaiveSync::finish() {
  check_all_ready();
  if (stream_ordered()) {  // the same collectives, queued; the compute stream waits for them
    for (const auto& p : params_) {
      const std::int64_t t0 = core::now_ns();
      defer(comm_.all_reduce(grad_slice(p.offset, p.count), comm::ReduceOp::Sum, comm::Mode::Async), p.index, t0,
            p.count * model::kParamElementBytes);
    }
    order_compute_after_deferred();
    return;
  }
  const std::int64_t wait_begin = core::now_ns();
  for (const auto& p : params_) {
    const std::int64_t t0 = core::now_ns();
    comm_.all_reduce(grad_slice(p.offset, p.count), comm::ReduceOp::Sum, comm::Mode::Sync);
    events_.record(core::EventKind::Collective, step_, p.index, t0, core::now_ns(),
                   p.count * model::kParamElementBytes);
  }
  events_.record(core::EventKind::CommWait, step_, -1, wait_begin, core::now_ns());
}

}  // namespace microddp::ddp
