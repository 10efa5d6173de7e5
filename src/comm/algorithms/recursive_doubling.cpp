// recursive_doubling.cpp — latency-optimised all-reduce for small messages.
//
// With p = largest power of two <= n and e = n - p "extra" ranks:
//   1. fold in:  for r < 2e, even rank r sends its buffer to r+1 and sits out; odd r+1 reduces it.
//   2. doubling: the p remaining ranks (renumbered 0..p-1) run log2(p) rounds; in round j partners
//      differ in bit j and exchange their whole buffers, so after the last round all p hold the
//      reduction of everything.
//   3. fold out: every odd r < 2e sends the result back to r-1.
// Cost: (log2 p + 2·[e > 0]) · (α + S·β) plus a reduction pass per round; latency-bound messages
// pay ~log2 n α instead of the ring's 2(n-1) α.
// Identical bits: both partners of a round combine the same two operands in the same order — the
// lower rank's value first — so they compute the same bits (no reliance on commutativity); the
// folded-out ranks receive a copy.
#include "comm/algorithms/p2p_algorithms.hpp"
#include "comm/algorithms/ring_layout.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::comm {

using core::TensorView;

void rd_all_reduce(P2pTransport& t, TensorView send, TensorView recv, core::ReduceOp op) {
  const std::int64_t count = recv.count;
  const int n = t.size(), r = t.rank();
  if (count == 0) return;
  copy_unless_same(recv, send);
  if (n == 1) return;
  const std::int64_t bytes = recv.bytes();
  const TensorView tmp(t.scratch(bytes), count, recv.dtype);
  const int p = floor_pow2(n), extra = n - p;

  int vrank = r - extra;  // rank among the p doubling ranks, -1 for folded-out ones
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      t.send(recv.data, bytes, r + 1);
      vrank = -1;
    } else {
      t.recv(tmp.data, bytes, r - 1);
      kernels::host_reduce(recv, tmp, recv, op);  // lower rank (r-1) first
      vrank = r / 2;
    }
  }
  if (vrank >= 0) {
    for (int mask = 1; mask < p; mask <<= 1) {
      const int vpeer = vrank ^ mask;
      const int peer = vpeer < extra ? 2 * vpeer + 1 : vpeer + extra;  // monotonic in vpeer
      t.sendrecv(recv.data, bytes, peer, tmp.data, bytes, peer);
      if (peer < r) {
        kernels::host_reduce(recv, tmp, recv, op);
      } else {
        kernels::host_reduce(recv, recv, tmp, op);
      }
    }
  }
  if (r < 2 * extra) {
    if (r % 2 == 1) {
      t.send(recv.data, bytes, r - 1);
    } else {
      t.recv(recv.data, bytes, r + 1);
    }
  }
}

}  // namespace microddp::comm
