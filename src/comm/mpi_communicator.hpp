// mpi_communicator.hpp — the `mpi` backend: every collective is the MPI library's own
// (MPI_Allreduce, MPI_Bcast, ...) on a private duplicate of the parent communicator.
// Contract: see communicator.hpp. Device buffers (Device::Cuda) go through device_staging.hpp: pinned
// host staging, or CUDA-aware MPI when the library says so at run time; builds without CUDA refuse them.
// No single MPI call moves more than max_chunk_count elements in total (block collectives: at least
// one element per rank), so 64-bit counts beyond INT_MAX are split, never truncated; the limit is settable so tests exercise the chunking with
// small counts. How each collective splits, and what it costs, is documented in the .cpp.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <memory>

#include "comm/communicator.hpp"
#include "comm/device_staging.hpp"

namespace microddp::comm {

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm parent);
  ~MpiCommunicator() override;
  std::string_view name() const override { return "mpi"; }

  // Largest element count one MPI call moves in total (default INT_MAX, range [1, INT_MAX]).
  // Tests lower it. Collective in effect: every rank must set the same value at the same point of
  // the collective sequence, because the chunking decides which MPI calls are made. Waits for
  // outstanding collectives first, so queued ones run under the limit they were issued with.
  void set_max_chunk_count(std::int64_t n);
  std::int64_t max_chunk_count() const { return max_chunk_count_; }

 protected:
  void execute(const CollectiveCall& call) override;

 private:
  void execute_host(const CollectiveCall& call);  // every used buffer is host memory (or CUDA-aware MPI)

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::unique_ptr<DeviceStaging> staging_ = make_device_staging();
  std::int64_t max_chunk_count_ = INT_MAX;
};

}  // namespace microddp::comm
