// gpu_sharing.hpp — which ranks of the job compute on the same physical GPU.
//
// A rank's GPU is its node-local rank modulo the GPUs it sees (compute_device.hpp, nccl_setup.hpp).
// Whether two ranks then share a GPU depends on what each process sees: with
// `srun --gpus-per-task=1` every rank sees exactly one GPU, numbered 0, and they are all different;
// with two ranks on a one-GPU workstation both see GPU 0, and it is the same. Only the GPU's UUID
// tells the two apart, so the ranks exchange it.
// Contract:
//   * analyze_gpu_sharing() is pure (unit-tested on the CPU): from every rank's identity it finds
//     the ranks that share a GPU; the result depends only on the identities, so every rank that
//     analyses the same gathered list reaches the same verdict.
//   * exchange_gpu_identities() is collective over the runtime's world (inside a watchdog section)
//     and returns that same verdict on every rank.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "comm/runtime/mpi_runtime.hpp"

namespace microddp::comm {

struct GpuIdentity {
  bool uses_gpu = false;                 // false: this rank computes on the CPU (uuid ignored)
  std::array<unsigned char, 16> uuid{};  // the physical GPU (cudaDeviceProp::uuid)
  std::string host;                      // for messages only (MPI_Get_processor_name)
};

struct GpuSharing {
  int max_ranks_per_gpu = 0;  // over the whole job; 0 when no rank uses a GPU, 1 when none share
  int ranks_without_gpu = 0;  // ranks that compute on the CPU (or could not get a GPU)
  std::vector<int> peers;     // for rank `me`: the other ranks on my GPU (empty: not shared)
  std::string example;        // e.g. "ranks 0 and 1 on host n1 share GPU GPU-1a2b..."; "" if none share
  bool shared() const { return max_ranks_per_gpu > 1; }
};

// `uuid_text` formats a UUID for the example message (kernels::format_device_uuid: the comm layer
// has no CUDA); nullptr leaves the UUID out.
using UuidText = std::string (*)(const std::array<unsigned char, 16>&);
GpuSharing analyze_gpu_sharing(const std::vector<GpuIdentity>& ranks, int me, UuidText uuid_text = nullptr);

GpuSharing exchange_gpu_identities(const MpiRuntime& runtime, const GpuIdentity& mine, UuidText uuid_text);

}  // namespace microddp::comm
