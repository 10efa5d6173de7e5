// hier_collectives.cpp — the hierarchical all-reduce over three transports (see hier_collectives.hpp).
// The node-local phases use direct messages (every rank to the shard's owner and back) rather than
// a ring: nodes have a few ranks, shared memory has no link to share, and each rank still sends
// (L-1)/L of the buffer, as in a ring, in one step instead of L-1.
#include "comm/hier_collectives.hpp"

#include <vector>

#include "comm/p2p_algorithms.hpp"
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
      for (std::size_t i = first_req[static_cast<std::size_t>(p)]; i < first_req[static_cast<std::size_t>(p) + 1]; ++i) {
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

}  // namespace

void hier_all_reduce(HierTopology& topo, TensorView send, TensorView recv, core::ReduceOp op,
                     std::int64_t segment_bytes, std::int64_t rd_max_bytes) {
  if (recv.count == 0) return;
  const HierLayout& h = topo.layout();
  node_reduce_scatter(topo.node(), h, send, recv, op);
  if (h.owns_shard() && h.nodes > 1) {
    // Every member of this cross-node group owns the same shard index, so the same count: they all
    // choose the same algorithm.
    const TensorView mine = shard_of(recv, recv.count, h.shards, h.local_rank);
    if (mine.count > 0) {
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
