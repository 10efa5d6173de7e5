// device_staging.hpp — lets a host-memory backend (`mpi`, `hier`: device_staged_backend.hpp) run
// collectives on device buffers (TensorView::device == Device::Cuda).
//
// Contract of run(call, rank, size, host_collective):
//   * Waits for all work queued on the buffers' GPU (cudaDeviceSynchronize: the backend sees no
//     streams, so this is the only way to know the data is final; it runs on the communication
//     thread, so the caller's thread is not blocked, but the collective starts only when the GPU idles).
//   * StagingPolicy::PassThroughIfCudaAwareMpi, and CUDA-aware MPI (MPIX_Query_cuda_support() == 1
//     at run time, where mpi-ext.h declares it): the call is passed through with device pointers,
//     except Mean, which is staged (its 1/n scaling is a host loop here). Only for a host collective
//     made of MPI calls alone (`mpi`); one that also touches the memory itself (hier's host
//     reductions) asks for StagingPolicy::AlwaysStage.
//   * Otherwise the used buffers are copied to pinned host memory (staging_plan.hpp: in-place layouts
//     kept), host_collective runs on them (Mean as Sum, then kernels::host_scale, as the base does for
//     host buffers), and recv's bytes are copied back. Staging buffers only grow.
//   * In a build without CUDA, make_device_staging() returns an object whose run() throws "built
//     without CUDA" (device_staging_none.cpp): no #if at the call site.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "comm/types.hpp"

namespace microddp::comm {

// Whether device pointers may reach the host collective at all (see the contract above).
enum class StagingPolicy { AlwaysStage, PassThroughIfCudaAwareMpi };

class DeviceStaging {
 public:
  virtual ~DeviceStaging() = default;
  virtual void run(const CollectiveCall& call, int rank, int size,
                   const std::function<void(const CollectiveCall&)>& host_collective) = 0;
  // "pinned-host staging", "CUDA-aware MPI", or "unavailable (built without CUDA)".
  virtual std::string mode() const = 0;
};

std::unique_ptr<DeviceStaging> make_device_staging(StagingPolicy policy);

// True if any buffer the collective uses on this rank is device memory.
bool uses_device_buffers(const CollectiveCall& call, int rank);

}  // namespace microddp::comm
