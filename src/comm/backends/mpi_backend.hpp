// mpi_backend.hpp — the `mpi` backend (a HostBackend, backend.hpp): every collective is the MPI
// library's own (MPI_Allreduce, MPI_Bcast, ...) on a private duplicate of the parent communicator.
// Contract: see backend.hpp. Device buffers (Device::Cuda) are staged (device_staged_backend.hpp):
// pinned host staging, or CUDA-aware MPI when the library says so at run time; builds without CUDA
// refuse them. No single MPI call moves more than max_chunk_count elements in total (block collectives: at
// least one element per rank), so 64-bit counts beyond INT_MAX are split, never truncated; the limit
// is a constructor argument so tests exercise the chunking with small counts. How each collective
// splits, and what it costs, is documented in the .cpp.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstdint>

#include "comm/backends/device_staged_backend.hpp"

namespace microddp::comm {

class MpiBackend final : public DeviceStagedBackend {
 public:
  // Collective over `parent`. max_chunk_count: the largest element count one MPI call moves in
  // total, in [1, INT_MAX] (core::Error otherwise, before any MPI call); tests lower it. Every rank
  // must pass the same value, because the chunking decides which MPI calls are made.
  explicit MpiBackend(MPI_Comm parent, std::int64_t max_chunk_count = INT_MAX);
  ~MpiBackend() override;
  std::string_view name() const override { return "mpi"; }

  std::int64_t max_chunk_count() const { return max_chunk_count_; }

 protected:
  void execute_host(const CollectiveCall& call) override;  // every used buffer is host memory (or CUDA-aware MPI)

 private:
  std::int64_t max_chunk_count_;
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace microddp::comm
