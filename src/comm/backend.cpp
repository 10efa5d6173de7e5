// backend.cpp — the backends' shared part: rank checks, and Mean on host buffers (backend.hpp).
#include "comm/backend.hpp"

#include "core/error.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::comm {

Backend::Backend(int rank, int size) : rank_(rank), size_(size) {
  MDDP_CHECK(size >= 1 && rank >= 0 && rank < size, "invalid rank " << rank << " of " << size);
}

void HostBackend::run(const CollectiveCall& call) {
  // Host buffers, or a call that moves nothing (a zero count labelled Device::Cuda never reaches a
  // device path, so it must not reach a host library with Mean either: the emulated device found it).
  if (call.op == ReduceOp::Mean && (call.recv.device == core::Device::Host || call.recv.count == 0)) {
    CollectiveCall sum = call;
    sum.op = ReduceOp::Sum;
    execute(sum);
    if ((call.kind == CollectiveKind::AllReduce || call.kind == CollectiveKind::ReduceScatter) && call.recv.count > 0) {
      kernels::host_scale(call.recv, 1.0 / static_cast<double>(size()));
    }
    return;
  }
  execute(call);
}

}  // namespace microddp::comm
