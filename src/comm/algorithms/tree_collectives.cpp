// tree_collectives.cpp — broadcast (binomial tree, segmented; pipelined chain for large messages),
// scatter/gather (linear at the root) and the dissemination barrier, hand-rolled over P2pTransport.
// Costs in docs/sync_primitives.md.
#include "comm/algorithms/p2p_algorithms.hpp"
#include "comm/algorithms/ring_layout.hpp"

namespace microddp::comm {

using core::TensorView;

// Binomial tree on virtual ranks v = (r - root) mod n: v receives from v - lowbit(v) and sends to
// v + m for every power of two m < lowbit(v) (root: m < n), largest subtree first. ceil(log2 n)
// rounds. The buffer travels in segments: a rank forwards segment k as soon as it has it, so the
// rounds overlap and latency is paid per segment, not per round of the whole message. It does not
// bring the bandwidth term to S·β: the root sends every segment to each of its ceil(log2 n)
// children over its one link, ceil(log2 n)·S bytes (S·β needs a pipelined chain, chain_broadcast
// below, or scatter + all-gather; docs/sync_primitives.md).
void tree_broadcast(P2pTransport& t, TensorView buf, int root, std::int64_t segment_bytes) {
  const std::int64_t count = buf.count;
  const int n = t.size(), r = t.rank();
  if (count == 0 || n == 1) return;
  const int v = ring_mod(static_cast<std::int64_t>(r) - root, n);
  const int low = v == 0 ? floor_pow2(n) * 2 : (v & -v);
  const std::int64_t es = elem_size(buf);
  const std::int64_t K = ring_segments(count, es, segment_bytes);
  std::vector<MPI_Request>& rq = t.pool(0, K);
  if (v != 0) {
    const int parent = ring_mod(static_cast<std::int64_t>(v - low) + root, n);
    for (std::int64_t k = 0; k < K; ++k) {
      const IndexRange s = even_part(count, K, k);
      rq[static_cast<std::size_t>(k)] = t.irecv_one(static_cast<char*>(buf.data) + s.begin * es, s.count * es, parent);
    }
  }
  std::vector<MPI_Request>& sends = t.list(0);
  for (std::int64_t k = 0; k < K; ++k) {
    P2pTransport::wait(rq[static_cast<std::size_t>(k)]);
    const IndexRange s = even_part(count, K, k);
    for (int m = low / 2; m >= 1; m /= 2) {
      if (v + m < n) {
        sends.push_back(t.isend_one(static_cast<char*>(buf.data) + s.begin * es, s.count * es,
                                    ring_mod(static_cast<std::int64_t>(v + m) + root, n)));
      }
    }
  }
  P2pTransport::wait_all(sends);
}

// Chain on virtual ranks v = (r - root) mod n: v receives every segment from v - 1 and forwards it
// to v + 1 as soon as it has it (all receives posted up front), so every rank sends each byte at
// most once: with K segments the last one arrives after n - 2 + K steps of α + S/K·β, which tends
// to S·β as K grows, where the binomial tree's root link carries ceil(log2 n)·S. The price is the
// pipeline fill, n - 2 segment steps: the chain pays for large messages only (CommConfig::
// chain_broadcast_min_bytes).
void chain_broadcast(P2pTransport& t, TensorView buf, int root, std::int64_t segment_bytes) {
  const std::int64_t count = buf.count;
  const int n = t.size(), r = t.rank();
  if (count == 0 || n == 1) return;
  const int v = ring_mod(static_cast<std::int64_t>(r) - root, n);
  const int prev = ring_mod(static_cast<std::int64_t>(r) - 1, n), next = ring_mod(static_cast<std::int64_t>(r) + 1, n);
  const std::int64_t es = elem_size(buf);
  const std::int64_t K = ring_segments(count, es, segment_bytes);
  auto segment = [&](std::int64_t k) {
    const IndexRange s = even_part(count, K, k);
    return buf.slice(s.begin, s.count);
  };
  std::vector<MPI_Request>& from_prev = t.pool(0, K);
  std::vector<MPI_Request>& to_next = t.pool(1, K);
  if (v != 0) {
    for (std::int64_t k = 0; k < K; ++k) {
      const TensorView g = segment(k);
      from_prev[static_cast<std::size_t>(k)] = t.irecv_one(g.data, g.bytes(), prev);
    }
  }
  for (std::int64_t k = 0; k < K; ++k) {
    P2pTransport::wait(from_prev[static_cast<std::size_t>(k)]);  // the root's are MPI_REQUEST_NULL
    if (v != n - 1) {
      const TensorView g = segment(k);
      to_next[static_cast<std::size_t>(k)] = t.isend_one(g.data, g.bytes(), next);
    }
  }
  for (auto& req : to_next) P2pTransport::wait(req);
}

// Root sends block i to rank i directly (n-1 messages in flight at once); others receive one.
void linear_scatter(P2pTransport& t, TensorView send, TensorView recv, int root) {
  const std::int64_t c = recv.count;
  const int n = t.size(), r = t.rank();
  if (c == 0) return;
  if (r != root) {
    t.recv(recv.data, recv.bytes(), root);
    return;
  }
  std::vector<MPI_Request>& reqs = t.list(0);
  for (int i = 0; i < n; ++i) {
    if (i != root) t.isend(send.slice(i * c, c).data, recv.bytes(), i, reqs);
  }
  copy_unless_same(recv, send.slice(root * c, c));
  P2pTransport::wait_all(reqs);
}

// Root receives block i from rank i straight into place; others send one message.
void linear_gather(P2pTransport& t, TensorView send, TensorView recv, int root) {
  const std::int64_t c = send.count;
  const int n = t.size(), r = t.rank();
  if (c == 0) return;
  if (r != root) {
    t.send(send.data, send.bytes(), root);
    return;
  }
  std::vector<MPI_Request>& reqs = t.list(0);
  for (int i = 0; i < n; ++i) {
    if (i != root) t.irecv(recv.slice(i * c, c).data, send.bytes(), i, reqs);
  }
  copy_unless_same(recv.slice(root * c, c), send);
  P2pTransport::wait_all(reqs);
}

// Round j: send an empty message to r + 2^j, receive one from r - 2^j. After ceil(log2 n) rounds
// every rank has (transitively) heard from every other, so nobody leaves before all have arrived.
void dissemination_barrier(P2pTransport& t) {
  const int n = t.size(), r = t.rank();
  for (int d = 1; d < n; d *= 2) t.sendrecv(nullptr, 0, ring_mod(r + d, n), nullptr, 0, ring_mod(r - d, n));
}

}  // namespace microddp::comm
