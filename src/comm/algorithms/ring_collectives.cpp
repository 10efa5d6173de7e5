// ring_collectives.cpp — the bandwidth-optimal ring: reduce-scatter, all-gather, and all-reduce as
// reduce-scatter followed by all-gather. docs/allreduce.md has the step diagrams and α-β costs.
//
// Layout (ring_layout.hpp): the buffer is cut into n chunks (even_part: lengths differ by at most
// one, empty ones allowed), every chunk into K pipeline segments of <= segment_bytes. Which block
// rank r sends and receives at each step is the ring's one schedule (ring_schedule.hpp), shared with
// the GPU ring: reduce-scatter forwards the block it reduced at the step before, and after n-1 steps
// rank r owns the full reduction of block r; all-gather receives straight into place.
// Pipelining: all receives of step s+1 are posted (double-buffered scratch) while step s reduces,
// and segment k of step s is forwarded as soon as it is reduced, so at any moment one segment is
// being reduced while the next ones are in flight in both directions.
// Identical bits on all ranks: each block is reduced on exactly one chain and the finished block is
// then only copied around the ring, never recomputed.
// Scratch: all-reduce 2 chunks (receive double buffer); reduce-scatter 4 blocks (2 receive + 2
// partial-sum slots, because the caller's send buffer must stay unchanged out of place).
#include <cstring>

#include "comm/algorithms/p2p_algorithms.hpp"
#include "comm/algorithms/ring_layout.hpp"
#include "comm/algorithms/ring_schedule.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::comm {

using core::TensorView;

void copy_unless_same(TensorView dst, TensorView src) {
  if (dst.count == 0 || dst.data == src.data) return;
  std::memmove(dst.data, src.data, static_cast<std::size_t>(dst.bytes()));
}

namespace {

// Scratch, in blocks: the all-reduce's receive double buffer (2); reduce-scatter's receive double
// buffer plus the partial sums of steps of either parity (4), because out of place the caller's
// send buffer must stay unchanged.
constexpr std::int64_t kAllReduceScratchBlocks = 2;
constexpr std::int64_t kReduceScatterScratchBlocks = 4;

TensorView segment(const TensorView& v, std::int64_t k, std::int64_t segments) {
  const IndexRange s = even_part(v.count, segments, k);
  return v.slice(s.begin, s.count);
}

// Pipelined ring reduce-scatter over n blocks.
//   in(b)       this rank's contribution to block b (read-only)
//   acc(b, s)   where the partial result for block b received at step s goes (at s = n-2: the output)
//   tmp(slot,b) receive buffer for block b (slot = s % 2)
template <typename In, typename Acc, typename Tmp>
void ring_reduce_phase(P2pTransport& t, std::int64_t segments, core::ReduceOp op, In in, Acc acc, Tmp tmp) {
  const int n = t.size(), r = t.rank();
  if (n == 1) return;
  const int right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
  const std::int64_t K = segments;
  std::vector<MPI_Request>* rq[2] = {&t.pool(0, K), &t.pool(1, K)};
  std::vector<MPI_Request>* sq[2] = {&t.pool(2, K), &t.pool(3, K)};
  auto post_recvs = [&](int s) {
    const TensorView dst = tmp(s % 2, rs_recv_block(r, n, s));
    for (std::int64_t k = 0; k < K; ++k) {
      const TensorView g = segment(dst, k, K);
      (*rq[s % 2])[static_cast<std::size_t>(k)] = t.irecv_one(g.data, g.bytes(), left);
    }
  };
  post_recvs(0);
  {
    const TensorView src = in(rs_send_block(r, n, 0));
    for (std::int64_t k = 0; k < K; ++k) {
      const TensorView g = segment(src, k, K);
      (*sq[0])[static_cast<std::size_t>(k)] = t.isend_one(g.data, g.bytes(), right);
    }
  }
  for (int s = 0; s <= n - 2; ++s) {
    const bool last = s == n - 2;
    if (!last) post_recvs(s + 1);
    const int b = rs_recv_block(r, n, s);  // forwarded at step s+1: rs_send_block(r, n, s + 1) == b
    const TensorView mine = in(b), incoming = tmp(s % 2, b), out = acc(b, s);
    for (std::int64_t k = 0; k < K; ++k) {
      const auto ks = static_cast<std::size_t>(k);
      P2pTransport::wait((*rq[s % 2])[ks]);
      // The send of step s-1 read the slot we are about to overwrite (reduce-scatter's partial-sum
      // slots alternate); at the last step also the send of step s, which may read the caller's
      // input where an in-place output lands.
      P2pTransport::wait((*sq[(s + 1) % 2])[ks]);
      if (last) P2pTransport::wait((*sq[s % 2])[ks]);
      const TensorView o = segment(out, k, K);
      kernels::host_reduce(o, segment(mine, k, K), segment(incoming, k, K), op);
      if (!last) (*sq[(s + 1) % 2])[ks] = t.isend_one(o.data, o.bytes(), right);
    }
  }
  for (auto* q : sq) {
    for (auto& req : *q) P2pTransport::wait(req);
  }
}

// Pipelined ring all-gather: block(b) is the place of block b in the output; rank r already holds
// block r there.
template <typename Block>
void ring_gather_phase(P2pTransport& t, std::int64_t segments, Block block) {
  const int n = t.size(), r = t.rank();
  if (n == 1) return;
  const int right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
  const std::int64_t K = segments, steps = n - 1;
  std::vector<MPI_Request>& rq = t.pool(0, steps * K);
  std::vector<MPI_Request>& sq = t.pool(1, steps * K);
  // Every receive targets a distinct block, so all of them can be posted up front.
  for (int s = 0; s < steps; ++s) {
    const TensorView dst = block(ag_recv_block(r, n, s));
    for (std::int64_t k = 0; k < K; ++k) {
      const TensorView g = segment(dst, k, K);
      rq[static_cast<std::size_t>(s * K + k)] = t.irecv_one(g.data, g.bytes(), left);
    }
  }
  const TensorView own = block(ag_send_block(r, n, 0));  // the own block r
  for (std::int64_t k = 0; k < K; ++k) {
    const TensorView g = segment(own, k, K);
    sq[static_cast<std::size_t>(k)] = t.isend_one(g.data, g.bytes(), right);
  }
  for (int s = 0; s < steps; ++s) {
    const TensorView got = block(ag_recv_block(r, n, s));  // forwarded at step s+1: ag_send_block(r, n, s + 1)
    for (std::int64_t k = 0; k < K; ++k) {
      P2pTransport::wait(rq[static_cast<std::size_t>(s * K + k)]);
      if (s + 1 < steps) {
        const TensorView g = segment(got, k, K);
        sq[static_cast<std::size_t>((s + 1) * K + k)] = t.isend_one(g.data, g.bytes(), right);
      }
    }
  }
  for (auto& req : sq) P2pTransport::wait(req);
}

}  // namespace

void ring_all_reduce(P2pTransport& t, TensorView send, TensorView recv, core::ReduceOp op, std::int64_t segment_bytes) {
  const std::int64_t count = recv.count;
  const int n = t.size();
  if (count == 0) return;
  if (n == 1) {
    copy_unless_same(recv, send);
    return;
  }
  const std::int64_t es = elem_size(recv);
  const std::int64_t max_chunk = even_part(count, n, 0).count;
  const std::int64_t K = ring_segments(max_chunk, es, segment_bytes);
  char* scratch = t.scratch(kAllReduceScratchBlocks * max_chunk * es);
  auto chunk = [&](const TensorView& v, int b) {
    const IndexRange c = even_part(count, n, b);
    return v.slice(c.begin, c.count);
  };
  ring_reduce_phase(
      t, K, op, [&](int b) { return chunk(send, b); }, [&](int b, int) { return chunk(recv, b); },
      [&](int slot, int b) {
        return TensorView(scratch + slot * max_chunk * es, even_part(count, n, b).count, recv.dtype);
      });
  // Between the phases every request of the reduce-scatter has completed, so the all-gather may
  // receive into chunks that were being sent a moment ago.
  ring_gather_phase(t, K, [&](int b) { return chunk(recv, b); });
}

void ring_all_gather(P2pTransport& t, TensorView send, TensorView recv, std::int64_t segment_bytes) {
  const std::int64_t c = send.count;
  if (c == 0) return;
  const int r = t.rank();
  copy_unless_same(recv.slice(r * c, c), send);
  const std::int64_t K = ring_segments(c, elem_size(send), segment_bytes);
  ring_gather_phase(t, K, [&](int b) { return recv.slice(b * c, c); });
}

void ring_reduce_scatter(P2pTransport& t, TensorView send, TensorView recv, core::ReduceOp op,
                         std::int64_t segment_bytes) {
  const std::int64_t c = recv.count;
  const int n = t.size();
  if (c == 0) return;
  if (n == 1) {
    copy_unless_same(recv, send.slice(0, c));
    return;
  }
  const std::int64_t es = elem_size(recv);
  const std::int64_t K = ring_segments(c, es, segment_bytes);
  // Slots 0,1: receive double buffer; slots 2,3: partial sums of steps with parity 0,1.
  char* scratch = t.scratch(kReduceScatterScratchBlocks * c * es);
  auto slot = [&](int i) { return TensorView(scratch + i * c * es, c, recv.dtype); };
  ring_reduce_phase(
      t, K, op, [&](int b) { return send.slice(b * c, c); },
      [&](int, int s) { return s == n - 2 ? recv : slot(2 + s % 2); }, [&](int sl, int) { return slot(sl); });
}

}  // namespace microddp::comm
