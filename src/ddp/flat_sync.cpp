// flat_sync.cpp — one all-reduce over the flat gradient buffer after backward.
#include "ddp/flat_sync.hpp"

namespace microddp::ddp {

void FlatSync::finish() {
  check_all_ready();
  const std::int64_t t0 = core::now_ns();
  comm_.all_reduce(grad_slice(0, total_count_), comm::ReduceOp::Sum, comm::Mode::Sync);
  const std::int64_t t1 = core::now_ns();
  events_.record(core::EventKind::Collective, step_, 0, t0, t1, total_count_ * 4);
  events_.record(core::EventKind::CommWait, step_, -1, t0, t1);
}

}  // namespace microddp::ddp
