// gpu_ranks.hpp — for the GPU tests: every rank's GPU (its node-local rank modulo the GPUs it sees,
// as the app and the NCCL backend choose it) compared across ranks, so a suite can skip on every
// rank alike when some rank has no GPU or, for a stream backend, when ranks share one
// (comm/gpu/gpu_sharing.hpp: UUIDs compared, so ranks that each see one GPU numbered 0 differ).
// Collective over the runtime's world.
#pragma once

#include "comm/gpu/gpu_sharing.hpp"
#include "comm/runtime/mpi_runtime.hpp"
#include "kernels/cuda/device.hpp"

namespace microddp::testing {

inline comm::GpuSharing exchange_rank_gpus(const comm::MpiRuntime& rt) {
  const int gpus = kernels::cuda_device_count();
  comm::GpuIdentity mine;
  mine.host = rt.hostname();
  if (gpus > 0) {
    mine.uses_gpu = true;
    mine.uuid = kernels::cuda_device_uuid(rt.local_rank() % gpus);
  }
  return comm::exchange_gpu_identities(rt, mine, kernels::format_device_uuid);
}

}  // namespace microddp::testing
