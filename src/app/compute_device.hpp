// compute_device.hpp — `--device cpu|cuda|auto` for `train`: which Ops a rank computes with, on
// which GPU, and which backend carries its gradients.
// Contract:
//   * A GPU model needs a backend that accepts device buffers: nccl, nccl-ring, mpi (pinned-host
//     staging or CUDA-aware MPI) or hier (pinned-host staging). The hand-rolled host backends (naive,
//     ring, rd, auto) do not.
//   * cuda: the rank's GPU, or a core::UsageError when the build has no CUDA, no GPU is visible, or
//     --comm names a host-only backend. Without --comm, the backend becomes nccl (mpi in a build
//     without NCCL).
//   * auto (the default) = cuda when the build has CUDA, this process sees a GPU, and --comm is
//     absent or device-capable; otherwise cpu. So `--comm ring` keeps meaning "our ring on the CPU",
//     and a GPU node runs the plain `train` command on its GPUs with NCCL.
//   * cpu: CpuOps with the given BLAS threads; the backend is --comm (default mpi).
//   * The GPU of a rank is its node-local rank modulo the visible GPUs: the same GPU the NCCL
//     backends pick (they require one GPU per rank; the mpi backend may share a GPU between ranks).
//     Ranks compare GPU UUIDs (comm/gpu/gpu_sharing.hpp): when some share a GPU and --comm was not
//     given, the backend is mpi instead of nccl, and ComputeChoice::note says so for the header.
//   * Ranks agree on failure: one agreed error (exit 2 everywhere) when every rank fails the same
//     way. Ranks that chose different devices are refused by the trainer's start-up check.
#pragma once

#include <memory>
#include <string>

#include "comm/runtime/mpi_runtime.hpp"
#include "kernels/ops.hpp"

namespace microddp::app {

// Throws core::UsageError for a name other than cpu, cuda, auto.
void validate_device_name(const std::string& device);

struct ComputeChoice {
  std::unique_ptr<kernels::Ops> ops;
  std::string comm;  // the backend to use (--comm, or the device's default when --comm was not given)
  std::string note;  // why the default backend was not taken ("" when it was), for the run header
};

// `comm`: the --comm value; `comm_given`: whether the user gave it. Collective over mpi.world().
ComputeChoice choose_compute(const std::string& device, const std::string& comm, bool comm_given, bool tf32,
                             int blas_threads, const comm::MpiRuntime& mpi);

// True for the backends that accept device buffers (the factory's description says which).
bool backend_accepts_device_buffers(const std::string& comm);

}  // namespace microddp::app
