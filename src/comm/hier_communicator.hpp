// hier_communicator.hpp — the hierarchical backend `hier`: all-reduce in three phases over the
// node topology (hier_collectives.hpp: reduce-scatter inside the node over shared memory,
// all-reduce of each shard across nodes, all-gather inside the node); the other collectives run the
// flat hand-rolled algorithms over all ranks (ring all-gather and reduce-scatter, tree broadcast,
// linear scatter/gather, dissemination barrier), as `ring` does.
//
// Contract: see communicator.hpp (async through the progress engine). Host buffers only. Nodes from
// MPI_COMM_TYPE_SHARED unless node_sizes overrides them (hier_topology.hpp). Tunables equal on all
// ranks: MICRODDP_RING_SEGMENT_BYTES (the rings' pipeline segment), MICRODDP_AUTO_RD_MAX_BYTES (the
// cross-node phase runs recursive doubling on shards up to this size, the ring above),
// MICRODDP_HIER_NODE_SIZES (the node override).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/hier_topology.hpp"

namespace microddp::comm {

class HierCommunicator final : public Communicator {
 public:
  // Collective over `parent`. node_sizes: parse_node_sizes() output, empty for the launcher's nodes.
  HierCommunicator(MPI_Comm parent, const std::vector<int>& node_sizes);
  ~HierCommunicator() override;
  std::string_view name() const override { return "hier"; }
  const HierLayout& layout() const { return topo_.layout(); }

 protected:
  void execute(const CollectiveCall& call) override;

 private:
  HierTopology topo_;
  std::int64_t segment_bytes_;
  std::int64_t rd_max_bytes_;
};

}  // namespace microddp::comm
