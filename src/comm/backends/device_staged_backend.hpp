// device_staged_backend.hpp — a HostBackend whose collectives are written for host memory and that
// accepts device buffers by staging them (device_staging.hpp): the `mpi` and `hier` backends. The
// staging decision is made here once, so a backend only writes execute_host().
//
// Contract (beyond backend.hpp): execute() runs execute_host() directly when no buffer the collective
// uses on this rank is device memory; otherwise through DeviceStaging::run with the backend's
// StagingPolicy, so execute_host() sees pinned host copies (Mean lowered to Sum and scaled by the
// staging, as HostBackend::run does for host buffers) or, only with PassThroughIfCudaAwareMpi and a
// CUDA-aware MPI, the device pointers themselves. Builds without CUDA refuse device buffers with
// one clear error.
#pragma once

#include <memory>

#include "comm/backend.hpp"
#include "comm/gpu/device_staging.hpp"

namespace microddp::comm {

class DeviceStagedBackend : public HostBackend {
 public:
  DeviceStagedBackend(int rank, int size, StagingPolicy policy);

 protected:
  void execute(const CollectiveCall& call) final;
  // Runs `call` to completion on host buffers (device buffers only under the pass-through above).
  virtual void execute_host(const CollectiveCall& call) = 0;

 private:
  std::unique_ptr<DeviceStaging> staging_;
};

}  // namespace microddp::comm
