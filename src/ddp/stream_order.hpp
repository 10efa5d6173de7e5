// stream_order.hpp — the one answer to "does this step's collective complete in stream order?", and
// the host's wait that goes with it.
//
// A stream-ordered communicator (NCCL) on device buffers completes a collective on the device: the
// compute stream is made to wait for it (Communicator::order_compute_after) and the host does not.
// Every other pairing (a host backend; host buffers) completes collectives on the host. The step's
// parts that branch on it (the gradient sync, the numerics verdict, the sharded update) ask here, so
// the rule is written once.
#pragma once

#include "comm/communicator.hpp"
#include "core/tensor_view.hpp"
#include "kernels/ops.hpp"

namespace microddp::ddp {

// Whether collectives over buffers on `device` complete in the compute stream's order.
inline bool completes_in_stream_order(const comm::Communicator& comm, core::Device device) {
  return comm.completes_in_stream_order() && device != core::Device::Host;
}

// Before the host synchronises with the compute stream of `ops`: on a stream-ordered communicator
// that stream may wait for collectives, and one whose peer died or hangs never completes on a GPU, so
// the host waits through the communicator (Communicator::wait_for_stream: the --comm-timeout and the
// backend's asynchronous error, never a blocked cudaStreamSynchronize). Otherwise nothing to do.
inline void watch_collectives_until_stream_idle(comm::Communicator& comm, kernels::Ops& ops) {
  if (completes_in_stream_order(comm, ops.device())) comm.wait_for_stream(ops.stream());
}

}  // namespace microddp::ddp
