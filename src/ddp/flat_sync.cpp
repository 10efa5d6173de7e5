// flat_sync.cpp — one all-reduce over the flat gradient buffer after backward.
#include "ddp/flat_sync.hpp"

namespace microddp::ddp {

void FlatSync::finish() {
  check_all_ready();
  if (stream_ordered()) {  // queued; the compute stream waits for it
    const std::int64_t t0 = core::now_ns();
    defer(comm_.all_reduce(grad_slice(0, total_count_), comm::ReduceOp::Sum, comm::Mode::Async), 0, t0,
          total_count_ * model::kParamElementBytes);
    order_compute_after_deferred();
    return;
  }
  const std::int64_t t0 = core::now_ns();
  comm_.all_reduce(grad_slice(0, total_count_), comm::ReduceOp::Sum, comm::Mode::Sync);
  const std::int64_t t1 = core::now_ns();
  events_.record(core::EventKind::Collective, step_, 0, t0, t1, total_count_ * model::kParamElementBytes);
  events_.record(core::EventKind::CommWait, step_, -1, t0, t1);
}

}  // namespace microddp::ddp
