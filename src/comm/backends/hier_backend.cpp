// hier_backend.cpp — dispatch of the hierarchical backend (see hier_backend.hpp).
#include "comm/backends/hier_backend.hpp"

#include <algorithm>

#include "comm/algorithms/flat_collectives.hpp"
#include "comm/algorithms/hier_collectives.hpp"
#include "comm/transport/mpi_comm_size.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace microddp::comm {

HierBackend::HierBackend(MPI_Comm parent, const CommConfig& config)
    : DeviceStagedBackend(mpi_comm_rank(parent), mpi_comm_size(parent), StagingPolicy::AlwaysStage),
      topo_(parent, config.hier_node_sizes, config.p2p_max_message_bytes),
      segment_bytes_(
          std::min(config.ring_segment_bytes, topo_.world().max_message_bytes())),  // a segment is one message
      rd_max_bytes_(config.auto_rd_max_bytes),
      chain_broadcast_min_bytes_(config.chain_broadcast_min_bytes) {
  // What the launcher (or the override) said: the one fact that decides what crosses the network.
  const HierLayout& h = topo_.layout();
  MDDP_INFO_ROOT("hier: " << h.nodes << " node(s), " << h.local_size << " rank(s) on rank 0's node, " << h.shards
                          << " shard(s) per node cross nodes"
                          << (config.hier_node_sizes.empty() ? "" : " (MICRODDP_HIER_NODE_SIZES)"));
}

void HierBackend::execute_host(const CollectiveCall& call) {
  topo_.begin(call.seq);
  if (call.kind == CollectiveKind::AllReduce) {
    hier_all_reduce(topo_, call.send, call.recv, call.op, segment_bytes_, rd_max_bytes_);
    return;
  }
  run_flat_collective(topo_.world(), call, segment_bytes_, chain_broadcast_min_bytes_);
}

}  // namespace microddp::comm
