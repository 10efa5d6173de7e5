// hier_topology.hpp — which ranks share a node, for the hierarchical backend `hier`
// (hier_collectives.cpp): the node-local group, the cross-node group of ranks with the same local
// index, and how a buffer is cut into the shards that travel between nodes.
//
// Contract:
//   * Nodes come from the launcher: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), i.e. the ranks that
//     can share memory (on the emulated cluster, tests/cluster/cluster.sh, one namespace host). A
//     node's index is its order by lowest world rank.
//   * A node-size override replaces the launcher's answer, so the exactness tests run the
//     hierarchical paths on one machine (MICRODDP_HIER_NODE_SIZES): "K" puts world ranks
//     [iK, (i+1)K) on node i (the last node may be smaller); "a,b,c" gives node i the next a, b, c
//     ranks and must add up to the world size. parse_node_sizes() checks the text alone (every rank
//     alike, before MPI starts); resolve_node_of_rank() checks it against the world size.
//   * Uneven nodes: the buffer is cut into `shards` = the smallest node's rank count parts
//     (even_part, ring_layout.hpp). On every node local rank j < shards owns shard j and runs the
//     cross-node all-reduce of shard j with the local ranks j of the other nodes (every node has
//     one). Local ranks >= shards (ranks that have no peer at their local index on the smallest
//     node) contribute in the node-local reduce-scatter and receive in the node-local all-gather,
//     and take no part across nodes. With equal nodes every rank owns one shard.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "comm/algorithms/ring_layout.hpp"
#include "comm/comm_config.hpp"  // parse_node_sizes
#include "comm/transport/p2p_transport.hpp"

namespace microddp::comm {

// Node index of every world rank (size `world`) under `sizes` (non-empty, from parse_node_sizes).
// UsageError when a list does not add up to `world`.
std::vector<int> resolve_node_of_rank(const std::vector<int>& sizes, int world, std::string_view what);

// Pure description of one rank's place (tested without MPI).
struct HierLayout {
  int nodes = 1;       // number of nodes
  int node = 0;        // this rank's node index
  int local_rank = 0;  // rank within its node
  int local_size = 1;  // ranks on its node
  int shards = 1;      // smallest node's rank count: the buffer's cut for the cross-node phase
  bool owns_shard() const { return local_rank < shards; }
  // Shard j of a count-element buffer (j < shards): contiguous, lengths differ by at most one.
  static IndexRange shard(std::int64_t count, int shards, int j) { return even_part(count, shards, j); }
};

// The three groups a hierarchical collective uses, each with its own private transport (tags and
// scratch of one phase never meet another's). Collective over `world`.
class HierTopology {
 public:
  // node_sizes: parse_node_sizes() output (empty: MPI_COMM_TYPE_SHARED); max_message_bytes: the
  // transports' largest single message (CommConfig::p2p_max_message_bytes).
  HierTopology(MPI_Comm world, const std::vector<int>& node_sizes, std::int64_t max_message_bytes);
  const HierLayout& layout() const { return layout_; }
  P2pTransport& world() { return *world_; }
  P2pTransport& node() { return *node_; }
  // Only for ranks that own a shard (layout().owns_shard()).
  P2pTransport& cross() { return *cross_; }
  // Every transport of this rank starts collective `seq` (tags).
  void begin(std::uint64_t seq);
  // World rank of local rank `local` of node `node`.
  int world_rank(int node, int local) const {
    return world_rank_of_[static_cast<std::size_t>(node)][static_cast<std::size_t>(local)];
  }
  // Every node's world ranks, [node][local rank], the same on every rank (lab 11 is given this).
  const std::vector<std::vector<int>>& ranks_by_node() const { return world_rank_of_; }

 private:
  HierLayout layout_;
  std::vector<std::vector<int>> world_rank_of_;  // [node][local rank]
  std::unique_ptr<P2pTransport> world_, node_, cross_;
};

}  // namespace microddp::comm
