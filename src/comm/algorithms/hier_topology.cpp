// hier_topology.cpp — node groups of the hierarchical backend (see hier_topology.hpp).
#include "comm/algorithms/hier_topology.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

#include "comm/transport/mpi_check.hpp"
#include "comm/transport/mpi_comm_size.hpp"
#include "core/error.hpp"

namespace microddp::comm {

std::vector<int> resolve_node_of_rank(const std::vector<int>& sizes, int world, std::string_view what) {
  MDDP_CHECK(!sizes.empty() && world >= 1, "resolve_node_of_rank: no sizes or no ranks");
  std::vector<int> node_of(static_cast<std::size_t>(world));
  if (sizes.size() == 1) {
    for (int r = 0; r < world; ++r) node_of[static_cast<std::size_t>(r)] = r / sizes[0];
    return node_of;
  }
  std::int64_t total = 0;
  for (int s : sizes) total += s;
  MDDP_USAGE_CHECK(total == world, what << " lists nodes of " << total << " ranks in all, but the job has " << world);
  int r = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    for (int k = 0; k < sizes[i]; ++k) node_of[static_cast<std::size_t>(r++)] = static_cast<int>(i);
  }
  return node_of;
}

namespace {

// Frees a communicator the transports have duplicated (they keep their own copies).
struct CommGuard {
  MPI_Comm c = MPI_COMM_NULL;
  ~CommGuard() {
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
};

}  // namespace

HierTopology::HierTopology(MPI_Comm world, const std::vector<int>& node_sizes, std::int64_t max_message_bytes) {
  const int rank = mpi_comm_rank(world), size = mpi_comm_size(world);
  CommGuard node_comm, cross_comm;
  if (node_sizes.empty()) {
    MDDP_MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm.c));
  } else {
    const std::vector<int> node_of = resolve_node_of_rank(node_sizes, size, "MICRODDP_HIER_NODE_SIZES");
    MDDP_MPI_CHECK(MPI_Comm_split(world, node_of[static_cast<std::size_t>(rank)], rank, &node_comm.c));
  }
  layout_.local_rank = mpi_comm_rank(node_comm.c);
  layout_.local_size = mpi_comm_size(node_comm.c);
  // Node index = how many nodes have a lower leader (local rank 0) than this node's: the leaders'
  // world ranks, gathered everywhere, in order.
  int leader = layout_.local_rank == 0 ? rank : -1;
  MDDP_MPI_CHECK(MPI_Bcast(&leader, 1, MPI_INT, 0, node_comm.c));
  std::vector<int> leaders(static_cast<std::size_t>(size));
  int mine = layout_.local_rank == 0 ? rank : -1;
  MDDP_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT, leaders.data(), 1, MPI_INT, world));
  layout_.nodes = 0;
  for (int l : leaders) {
    if (l < 0) continue;
    if (l < leader) ++layout_.node;
    ++layout_.nodes;
  }
  MDDP_MPI_CHECK(MPI_Allreduce(&layout_.local_size, &layout_.shards, 1, MPI_INT, MPI_MIN, world));
  // Every rank's (node, local rank), for collectives that address a peer of another index.
  int place[2] = {layout_.node, layout_.local_rank};
  std::vector<int> places(2 * static_cast<std::size_t>(size));
  MDDP_MPI_CHECK(MPI_Allgather(place, 2, MPI_INT, places.data(), 2, MPI_INT, world));
  world_rank_of_.assign(static_cast<std::size_t>(layout_.nodes), {});
  for (int r = 0; r < size; ++r) {
    auto& node = world_rank_of_[static_cast<std::size_t>(places[2 * static_cast<std::size_t>(r)])];
    const auto local = static_cast<std::size_t>(places[2 * static_cast<std::size_t>(r) + 1]);
    if (node.size() <= local) node.resize(local + 1, -1);
    node[local] = r;
  }
  // Ranks with the same local index (< shards) form one cross-node group, one member per node,
  // ordered by world rank (the order its ring runs in).
  const int color = layout_.owns_shard() ? layout_.local_rank : MPI_UNDEFINED;
  MDDP_MPI_CHECK(MPI_Comm_split(world, color, rank, &cross_comm.c));
  world_ = std::make_unique<P2pTransport>(world, max_message_bytes);
  node_ = std::make_unique<P2pTransport>(node_comm.c, max_message_bytes);
  if (cross_comm.c != MPI_COMM_NULL) cross_ = std::make_unique<P2pTransport>(cross_comm.c, max_message_bytes);
}

void HierTopology::begin(std::uint64_t seq) {
  world_->begin(seq);
  node_->begin(seq);
  if (cross_) cross_->begin(seq);
}

}  // namespace microddp::comm
