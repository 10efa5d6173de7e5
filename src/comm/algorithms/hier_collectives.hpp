// hier_collectives.hpp — the hierarchical all-reduce (backend `hier`): for nodes with fast links
// inside (shared memory) and slow links between them.
//
//   1. reduce-scatter inside the node: local rank j (< shards) receives every node peer's part of
//      shard j and reduces it (its own part first, then the peers' in local-rank order);
//   2. all-reduce of shard j across nodes among the local ranks j of all nodes (a ring, or
//      recursive doubling for shards of at most rd_max_bytes), so every inter-node link carries
//      1/shards of the data instead of the whole buffer;
//   3. all-gather inside the node: the owner of shard j sends it to each node peer.
// Layout and uneven nodes: hier_topology.hpp (shards = the smallest node's rank count; local ranks
// beyond it only send in 1 and receive in 3).
//
// Contract: that of p2p_algorithms.hpp (blocking, host buffers, CollectiveCall conventions and
// in-place rules, any count >= 0, Mean combines like Sum). The caller has called topo.begin(seq).
// Identical bits on all ranks: shard j is reduced on one rank per node in a fixed order, then by an
// all-reduce that leaves identical bits on its members (ring or rd), then only copied.
// Cost (α-β per link class, docs/hierarchical.md): with L ranks per node, N nodes and S bytes,
//   2·(L-1)·(α_intra + S/L·β_intra) + ring over N of S/L bytes: 2(N-1)·α_inter + 2(N-1)/N·S/L·β_inter,
// where each node's link carries the traffic of its L cross-node rings at once.
#pragma once

#include <cstdint>

#include "comm/algorithms/hier_topology.hpp"
#include "core/reduce_op.hpp"
#include "core/tensor_view.hpp"

namespace microddp::comm {

void hier_all_reduce(HierTopology& topo, core::TensorView send, core::TensorView recv, core::ReduceOp op,
                     std::int64_t segment_bytes, std::int64_t rd_max_bytes);

}  // namespace microddp::comm
