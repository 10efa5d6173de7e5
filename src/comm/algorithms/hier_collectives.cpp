// hier_collectives.cpp — the hierarchical all-reduce over three transports (see hier_collectives.hpp).
// The node-local phases use direct messages (every rank to the shard's owner and back) rather than
// a ring: nodes have a few ranks, shared memory has no link to share, and each rank still sends
// (L-1)/L of the buffer, as in a ring, in one step instead of L-1.
#include "comm/algorithms/hier_collectives.hpp"

#include <vector>

#include "comm/algorithms/p2p_algorithms.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::comm {

using core::TensorView;

namespace {

TensorView shard_of(const TensorView& v, std::int64_t count, int shards, int j) {
  const IndexRange s = HierLayout::shard(count, shards, j);
  return v.slice(s.begin, s.count);
}

// Phase 1: after it, local rank l < shards holds in recv's shard l the reduction over its node.
void node_reduce_scatter(P2pTransport& node, const HierLayout& h, TensorView send, TensorView recv, core::ReduceOp op) {
  const std::int64_t count = recv.count;
  const int L = h.local_size, l = h.local_rank, S = h.shards;
  const TensorView mine = h.owns_shard() ? shard_of(recv, count, S, l) : TensorView{};
  if (h.owns_shard()) copy_unless_same(mine, shard_of(send, count, S, l));
  if (L == 1) return;
  std::vector<MPI_Request>& sends = node.list(0);
  std::vector<MPI_Request>& recvs = node.list(1);
  // Receives first (one scratch slot per peer, in local-rank order), then the sends.
  std::vector<std::size_t> first_req(static_cast<std::size_t>(L) + 1, 0);
  const std::int64_t slot_bytes = mine.bytes();
  char* scratch = (h.owns_shard() && slot_bytes > 0) ? node.scratch((L - 1) * slot_bytes) : nullptr;
  auto slot = [&](int p) { return TensorView(scratch + (p < l ? p : p - 1) * slot_bytes, mine.count, recv.dtype); };
  for (int p = 0; p < L; ++p) {
    first_req[static_cast<std::size_t>(p)] = recvs.size();
    if (p != l && slot_bytes > 0) node.irecv(slot(p).data, slot_bytes, p, recvs);
  }
  first_req[static_cast<std::size_t>(L)] = recvs.size();
  for (int j = 0; j < S; ++j) {
    const TensorView part = shard_of(send, count, S, j);
    if (j != l && part.count > 0) node.isend(part.data, part.bytes(), j, sends);
  }
  if (slot_bytes > 0) {
    for (int p = 0; p < L; ++p) {
      if (p == l) continue;
      for (std::size_t i = first_req[static_cast<std::size_t>(p)]; i < first_req[static_cast<std::size_t>(p) + 1];
           ++i) {
        P2pTransport::wait(recvs[i]);
      }
      kernels::host_reduce_into(mine, slot(p), op);
    }
  }
  recvs.clear();
  P2pTransport::wait_all(sends);
}

// Phase 3: the owner of shard j sends it to every node peer; everyone else receives it in place.
void node_all_gather(P2pTransport& node, const HierLayout& h, TensorView recv) {
  const std::int64_t count = recv.count;
  const int L = h.local_size, l = h.local_rank, S = h.shards;
  if (L == 1) return;
  std::vector<MPI_Request>& reqs = node.list(0);
  for (int j = 0; j < S; ++j) {
    const TensorView part = shard_of(recv, count, S, j);
    if (j != l && part.count > 0) node.irecv(part.data, part.bytes(), j, reqs);
  }
  if (h.owns_shard()) {
    const TensorView mine = shard_of(recv, count, S, l);
    for (int p = 0; p < L; ++p) {
      if (p != l && mine.count > 0) node.isend(mine.data, mine.bytes(), p, reqs);
    }
  }
  P2pTransport::wait_all(reqs);
}

// Cross-node phase for exactly two nodes A (node 0) and B (node 1) and S >= 2 shards. A ring of two
// would exchange both halves of shard j over one connection in both directions at once, and on
// Open MPI's TCP transport such an exchange reached about half the link's rate (docs/hierarchical.md).
// Here every connection carries one direction: A_j sends to B_j; B_j sends to A_{j+1} (mod S), which
// forwards over shared memory to A_j. Shard j = halves h0 (reduced on A_j) and h1 (on B_j):
//   reduce-scatter: A_j -> B_j: A's h1;  B_j -> A_{j+1} -> A_j: B's h0
//   all-gather:     A_j -> B_j: reduced h0;  B_j -> A_{j+1} -> A_j: reduced h1
// Each half is reduced on one rank (A's value first), then copied: identical bits everywhere.
// `count` is the whole buffer's (A_j forwards halves of shard j-1, whose length may differ by one).
void two_node_all_reduce(HierTopology& topo, std::int64_t count, TensorView shard, core::ReduceOp op) {
  const HierLayout& h = topo.layout();
  const int S = h.shards, j = h.local_rank;
  P2pTransport& world = topo.world();
  P2pTransport& node = topo.node();
  const IndexRange r0 = even_part(shard.count, 2, 0), r1 = even_part(shard.count, 2, 1);
  const TensorView h0 = shard.slice(r0.begin, r0.count), h1 = shard.slice(r1.begin, r1.count);
  std::vector<MPI_Request>& net = world.list(0);
  if (h.node == 1) {  // B_j: receives from A_j, sends to A_{j+1}
    const int a_same = topo.world_rank(0, j), a_next = topo.world_rank(0, (j + 1) % S);
    const TensorView incoming(world.scratch(h1.bytes()), h1.count, h1.dtype);
    if (h1.count > 0) world.irecv(incoming.data, h1.bytes(), a_same, net);
    if (h0.count > 0) world.isend(h0.data, h0.bytes(), a_next, net);
    P2pTransport::wait_all(net);
    if (h1.count > 0) {
      kernels::host_reduce(h1, incoming, h1, op);  // A's value first
      world.isend(h1.data, h1.bytes(), a_next, net);
    }
    if (h0.count > 0) world.irecv(h0.data, h0.bytes(), a_same, net);
    P2pTransport::wait_all(net);
    return;
  }
  // A_j: sends to B_j, receives B_j's half from A_{j+1}, forwards B_{j-1}'s half to A_{j-1}.
  const int b_same = topo.world_rank(1, j), b_prev = topo.world_rank(1, (j + S - 1) % S);
  const int next_local = (j + 1) % S, prev_local = (j + S - 1) % S;
  const std::int64_t prev_count = HierLayout::shard(count, S, prev_local).count;
  auto step = [&](TensorView out_half, TensorView into, std::int64_t pass_count) {
    const TensorView pass(world.scratch(pass_count * elem_size(shard)), pass_count, shard.dtype);
    std::vector<MPI_Request>& in = node.list(1);
    std::vector<MPI_Request>& fwd = node.list(0);
    if (into.count > 0) node.irecv(into.data, into.bytes(), next_local, in);
    if (out_half.count > 0) world.isend(out_half.data, out_half.bytes(), b_same, net);
    if (pass_count > 0) {
      std::vector<MPI_Request>& from_b = world.list(1);
      world.irecv(pass.data, pass.bytes(), b_prev, from_b);
      P2pTransport::wait_all(from_b);
      node.isend(pass.data, pass.bytes(), prev_local, fwd);
    }
    P2pTransport::wait_all(in);
    P2pTransport::wait_all(fwd);
    P2pTransport::wait_all(net);
  };
  const TensorView incoming(node.scratch(h0.bytes()), h0.count, h0.dtype);
  step(h1, incoming, even_part(prev_count, 2, 0).count);
  if (h0.count > 0) kernels::host_reduce(h0, h0, incoming, op);  // A's value first
  step(h0, h1, even_part(prev_count, 2, 1).count);
}

}  // namespace

void hier_all_reduce(HierTopology& topo, TensorView send, TensorView recv, core::ReduceOp op,
                     std::int64_t segment_bytes, std::int64_t rd_max_bytes) {
  if (recv.count == 0) return;
  const HierLayout& h = topo.layout();
  node_reduce_scatter(topo.node(), h, send, recv, op);
  if (h.owns_shard() && h.nodes > 1) {
    const TensorView mine = shard_of(recv, recv.count, h.shards, h.local_rank);
    // Two nodes: the one-direction exchange, chosen by the largest shard (shard 0) so that every
    // owner takes part, also one whose own shard is shorter or empty: it forwards its neighbour's.
    const std::int64_t largest_bytes = HierLayout::shard(recv.count, h.shards, 0).count * elem_size(recv);
    if (h.nodes == 2 && h.shards >= 2 && largest_bytes > rd_max_bytes) {
      two_node_all_reduce(topo, recv.count, mine, op);
    } else if (mine.count > 0) {
      // Every member of this cross-node group owns the same shard index, so the same count: they
      // all choose the same algorithm.
      if (mine.bytes() <= rd_max_bytes) {
        rd_all_reduce(topo.cross(), mine, mine, op);
      } else {
        ring_all_reduce(topo.cross(), mine, mine, op, segment_bytes);
      }
    }
  }
  node_all_gather(topo.node(), h, recv);
}

}  // namespace microddp::comm
