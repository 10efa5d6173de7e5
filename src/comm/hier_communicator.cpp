// hier_communicator.cpp — dispatch of the hierarchical backend (see hier_communicator.hpp).
#include "comm/hier_communicator.hpp"

#include <algorithm>
#include <cstdlib>

#include "comm/hier_collectives.hpp"
#include "comm/mpi_check.hpp"
#include "comm/p2p_algorithms.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace microddp::comm {

namespace {

int comm_rank(MPI_Comm c) {
  int r = 0;
  MDDP_MPI_CHECK(MPI_Comm_rank(c, &r));
  return r;
}
int comm_size(MPI_Comm c) {
  int s = 0;
  MDDP_MPI_CHECK(MPI_Comm_size(c, &s));
  return s;
}

// The hand-rolled backends' defaults (hand_rolled_communicator.cpp): 4 MiB ring segments; recursive
// doubling up to 16 KiB.
std::int64_t env_bytes(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  const long long b = std::atoll(v);
  MDDP_CHECK(b >= 1, name << "=" << v << " must be a positive byte count");
  return b;
}

}  // namespace

HierCommunicator::HierCommunicator(MPI_Comm parent, const std::vector<int>& node_sizes)
    : Communicator(comm_rank(parent), comm_size(parent)),
      topo_(parent, node_sizes),
      segment_bytes_(std::min(env_bytes("MICRODDP_RING_SEGMENT_BYTES", std::int64_t{4} << 20),
                              topo_.world().max_message_bytes())),
      rd_max_bytes_(env_bytes("MICRODDP_AUTO_RD_MAX_BYTES", std::int64_t{16} << 10)) {
  // What the launcher (or the override) said: the one fact that decides what crosses the network.
  const HierLayout& h = topo_.layout();
  MDDP_INFO_ROOT("hier: " << h.nodes << " node(s), " << h.local_size << " rank(s) on rank 0's node, " << h.shards
                          << " shard(s) per node cross nodes" << (node_sizes.empty() ? "" : " (MICRODDP_HIER_NODE_SIZES)"));
}

HierCommunicator::~HierCommunicator() { shutdown(); }  // thread stops before the transports die

void HierCommunicator::execute(const CollectiveCall& call) {
  MDDP_CHECK(call.send.device == core::Device::Host && call.recv.device == core::Device::Host,
             name() << " backend: " << collective_name(call.kind)
                    << " on a device buffer (this backend moves host memory only)");
  topo_.begin(call.seq);
  P2pTransport& t = topo_.world();
  switch (call.kind) {
    case CollectiveKind::AllReduce:
      hier_all_reduce(topo_, call.send, call.recv, call.op, segment_bytes_, rd_max_bytes_);
      return;
    case CollectiveKind::Barrier: dissemination_barrier(t); return;
    case CollectiveKind::Broadcast: tree_broadcast(t, call.recv, call.root, segment_bytes_); return;
    case CollectiveKind::Scatter: linear_scatter(t, call.send, call.recv, call.root); return;
    case CollectiveKind::Gather: linear_gather(t, call.send, call.recv, call.root); return;
    case CollectiveKind::AllGather: ring_all_gather(t, call.send, call.recv, segment_bytes_); return;
    case CollectiveKind::ReduceScatter: ring_reduce_scatter(t, call.send, call.recv, call.op, segment_bytes_); return;
  }
  MDDP_CHECK(false, name() << " backend: unknown collective kind " << static_cast<int>(call.kind));
}

}  // namespace microddp::comm
