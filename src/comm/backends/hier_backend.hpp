// hier_backend.hpp — the hierarchical backend `hier`: all-reduce in three phases over the node
// topology (hier_collectives.hpp: reduce-scatter inside the node over shared memory, all-reduce of
// each shard across nodes, all-gather inside the node); the other collectives run the flat
// hand-rolled algorithms over all ranks (ring all-gather and reduce-scatter, tree broadcast, linear
// scatter/gather, dissemination barrier), as `ring` does.
//
// Contract: see backend.hpp (a HostBackend: async through the communicator's progress engine).
// Device buffers (Device::Cuda) are always staged through pinned host memory
// (device_staged_backend.hpp, StagingPolicy::AlwaysStage): the collectives below reduce what they
// receive with host loops (kernels/host_reduce.hpp), so even a CUDA-aware MPI could not let them
// take device pointers; every phase then runs on the host copies (no NCCL inside the node). Builds
// without CUDA refuse device buffers. Nodes from MPI_COMM_TYPE_SHARED unless CommConfig::hier_node_sizes overrides
// them (hier_topology.hpp). Tunables from CommConfig, equal on all ranks: ring_segment_bytes (the
// rings' pipeline segment), auto_rd_max_bytes (the cross-node phase runs recursive doubling on
// shards up to this size, the ring or the two-node exchange above), p2p_max_message_bytes.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string_view>

#include "comm/comm_config.hpp"
#include "comm/backends/device_staged_backend.hpp"
#include "comm/algorithms/hier_topology.hpp"

namespace microddp::comm {

class HierBackend final : public DeviceStagedBackend {
 public:
  // Collective over `parent`.
  HierBackend(MPI_Comm parent, const CommConfig& config);
  std::string_view name() const override { return "hier"; }
  const HierLayout& layout() const { return topo_.layout(); }
  const HierTopology& topology() const { return topo_; }

 protected:
  void execute_host(const CollectiveCall& call) override;

 private:
  HierTopology topo_;
  std::int64_t segment_bytes_;
  std::int64_t rd_max_bytes_;
  std::int64_t chain_broadcast_min_bytes_;
};

}  // namespace microddp::comm
