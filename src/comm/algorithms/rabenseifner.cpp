// rabenseifner.cpp — Rabenseifner's all-reduce for large messages: a reduce-scatter by recursive
// halving, then an all-gather by recursive doubling (the large-message all-reduce of MPICH and
// Open MPI's "rabenseifner" algorithm).
//
// With p = largest power of two <= n and e = n - p extra ranks, exactly as rd (recursive_doubling.cpp):
//   1. fold in:  for r < 2e, even rank r sends its buffer to r+1 and sits out; odd r+1 reduces it.
//   2. halving:  the p remaining ranks (virtual 0..p-1) cut the buffer into p blocks (even_part:
//      lengths differ by at most one, any count). Round mask = p/2, p/4, .., 1: partners differ in
//      bit `mask`; each holds a range of 2·mask blocks, keeps the half on its side of the bit (lower
//      half if its bit is 0), sends the other half and reduces the partner's copy of the kept half
//      into its own. After log2 p rounds virtual rank v holds block v fully reduced.
//   3. doubling: mask = 1, 2, .., p/2: partners exchange the 2^j blocks they hold, straight into
//      place, so the held range doubles; after log2 p rounds all p hold everything.
//   4. fold out: every odd r < 2e sends the result back to r-1.
// Cost: 2·log2 p·α + 2·(p-1)/p·S·β + (p-1)/p·S·γ, plus 2α + 2S·β + S·γ for the fold when n is not a
// power of two: the ring's bandwidth term (optimal) with log2 p latencies per phase instead of n-1.
// Identical bits: each block is reduced on one rank only (its owner after the halving, combining
// operands in the order of their ranks: the lower partner's first) and then only copied.
// Scratch: S bytes (the fold-in receives a whole buffer; the first halving round half of it).
#include "comm/algorithms/p2p_algorithms.hpp"
#include "comm/algorithms/ring_layout.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::comm {

using core::TensorView;

void rabenseifner_all_reduce(P2pTransport& t, TensorView send, TensorView recv, core::ReduceOp op) {
  const std::int64_t count = recv.count;
  const int n = t.size(), r = t.rank();
  if (count == 0) return;
  copy_unless_same(recv, send);
  if (n == 1) return;
  const std::int64_t es = elem_size(recv);
  char* scratch = t.scratch(recv.bytes());
  const int p = floor_pow2(n), extra = n - p;

  int vrank = r - extra;  // rank among the p halving/doubling ranks, -1 for folded-out ones
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      t.send(recv.data, recv.bytes(), r + 1);
      vrank = -1;
    } else {
      const TensorView tmp(scratch, count, recv.dtype);
      t.recv(tmp.data, recv.bytes(), r - 1);
      kernels::host_reduce(recv, tmp, recv, op);  // lower rank (r-1) first
      vrank = r / 2;
    }
  }
  if (vrank >= 0) {
    auto real = [&](int v) { return v < extra ? 2 * v + 1 : v + extra; };  // monotonic in v
    // Elements of blocks [first, first + blocks).
    auto blocks = [&](const TensorView& v, int first, int nblocks) {
      const std::int64_t begin = even_part(count, p, first).begin;
      const std::int64_t end = first + nblocks == p ? count : even_part(count, p, first + nblocks).begin;
      return TensorView(static_cast<char*>(v.data) + begin * es, end - begin, v.dtype);
    };
    int lo = 0, width = p;  // the blocks this rank holds: [lo, lo + width)
    for (int mask = p / 2; mask >= 1; mask /= 2) {
      const int peer = real(vrank ^ mask);
      const bool lower = (vrank & mask) == 0;
      width /= 2;
      const int keep = lower ? lo : lo + width, give = lower ? lo + width : lo;
      const TensorView kept = blocks(recv, keep, width), given = blocks(recv, give, width);
      const TensorView incoming(scratch, kept.count, recv.dtype);
      t.sendrecv(given.data, given.bytes(), peer, incoming.data, incoming.bytes(), peer);
      if (peer < r) {
        kernels::host_reduce(kept, incoming, kept, op);
      } else {
        kernels::host_reduce(kept, kept, incoming, op);
      }
      lo = keep;
    }
    for (int mask = 1; mask < p; mask *= 2) {
      const int peer = real(vrank ^ mask);
      const int theirs = (vrank & mask) == 0 ? lo + width : lo - width;
      const TensorView mine = blocks(recv, lo, width), got = blocks(recv, theirs, width);
      t.sendrecv(mine.data, mine.bytes(), peer, got.data, got.bytes(), peer);
      lo = std::min(lo, theirs);
      width *= 2;
    }
  }
  if (r < 2 * extra) {
    if (r % 2 == 1) {
      t.send(recv.data, recv.bytes(), r - 1);
    } else {
      t.recv(recv.data, recv.bytes(), r + 1);
    }
  }
}

}  // namespace microddp::comm
