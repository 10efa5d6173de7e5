// flat_sync.cpp — one all-reduce over the flat gradient buffer after backward.
#include "ddp/flat_sync.hpp"

namespace microddp::ddp {

void FlatSync::finish() {
  check_all_ready();
  if (stream_ordered()) {  // queued; the compute stream waits for it
    const std::int64_t t0 = core::now_ns();
    defer(launch_unit(0, comm::Mode::Async), 0, t0, unit_bytes(0));
    order_compute_after_deferred();
    return;
  }
  const std::int64_t t0 = core::now_ns();
  launch_unit(0, comm::Mode::Sync);
  complete_unit(0);
  const std::int64_t t1 = core::now_ns();
  record_collective(0, t0, 0, t1, unit_bytes(0));  // synchronous: started at t0
  events_.record(core::EventKind::CommWait, step_, -1, t0, t1);
}

}  // namespace microddp::ddp
