// test_ring_layout.cpp — the ring's index arithmetic (ring_layout.hpp) and its one schedule
// (ring_schedule.hpp, shared by the CPU and the GPU ring) as pure functions: chunks tile the buffer
// exactly for any count (0, < n, not divisible by n, large) and any n; lengths differ by at most one;
// segments tile every chunk; the schedule gives every rank every block exactly once (reduce-scatter
// ends with rank r owning block r; all-gather receives every other block).
#include <gtest/gtest.h>

#include <vector>

#include "comm/algorithms/ring_layout.hpp"
#include "comm/algorithms/ring_schedule.hpp"

namespace microddp::comm {
namespace {

TEST(RingLayout, EvenPartTilesAnyCount) {
  for (std::int64_t parts : {1, 2, 3, 4, 5, 7, 16}) {
    for (std::int64_t total : {0LL, 1LL, 2LL, 3LL, 4LL, 5LL, 6LL, 7LL, 15LL, 16LL, 17LL, 1000003LL, (1LL << 33) + 5}) {
      std::int64_t next = 0, lo = total, hi = 0;
      for (std::int64_t i = 0; i < parts; ++i) {
        const IndexRange r = even_part(total, parts, i);
        EXPECT_EQ(r.begin, next) << total << "/" << parts << " part " << i;
        EXPECT_GE(r.count, 0);
        next = r.begin + r.count;
        lo = std::min(lo, r.count);
        hi = std::max(hi, r.count);
      }
      EXPECT_EQ(next, total) << total << "/" << parts;
      EXPECT_LE(hi - lo, 1) << total << "/" << parts;
      EXPECT_EQ(even_part(total, parts, 0).count, hi);  // the first part is a longest one
    }
  }
}

TEST(RingLayout, FewerElementsThanParts) {
  // count < n: the first `count` chunks hold one element, the rest are empty.
  for (std::int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(even_part(3, 5, i), (IndexRange{std::min<std::int64_t>(i, 3), i < 3 ? 1 : 0}));
}

TEST(RingLayout, SegmentsBoundMessageSize) {
  EXPECT_EQ(ring_segments(0, 4, 1024), 1);
  EXPECT_EQ(ring_segments(1, 4, 1024), 1);
  EXPECT_EQ(ring_segments(256, 4, 1024), 1);
  EXPECT_EQ(ring_segments(257, 4, 1024), 2);
  EXPECT_EQ(ring_segments(1 << 20, 8, 1 << 18), 32);
  for (std::int64_t chunk : {1LL, 5LL, 1000LL, 250001LL}) {
    const std::int64_t k = ring_segments(chunk, 4, 4096);
    for (std::int64_t s = 0; s < k; ++s) EXPECT_LE(even_part(chunk, k, s).count * 4, 4096);
  }
}

TEST(RingLayout, ModAndPowerOfTwo) {
  EXPECT_EQ(ring_mod(-1, 5), 4);
  EXPECT_EQ(ring_mod(-7, 5), 3);
  EXPECT_EQ(ring_mod(12, 5), 2);
  EXPECT_EQ(floor_pow2(1), 1);
  EXPECT_EQ(floor_pow2(2), 2);
  EXPECT_EQ(floor_pow2(3), 2);
  EXPECT_EQ(floor_pow2(5), 4);
  EXPECT_EQ(floor_pow2(8), 8);
}

// The ring's one schedule (ring_schedule.hpp), used by the CPU ring and the GPU ring alike: what rank
// r receives at step s is what r-1 sends at step s (same block, so same length); reduce-scatter
// forwards at step s+1 the block it received at step s, receives every block but the one it sent
// first and ends owning block r; all-gather starts from the own block r, forwards what it received,
// and receives every block but its own.
TEST(RingSchedule, IsConsistent) {
  for (int n = 2; n <= 9; ++n) {
    for (int r = 0; r < n; ++r) {
      const int left = ring_mod(r - 1, n);
      std::vector<int> rs(n, 0), ag(n, 0);
      for (int s = 0; s <= n - 2; ++s) {
        EXPECT_EQ(rs_recv_block(r, n, s), rs_send_block(left, n, s));                // RS: recv == left's send
        EXPECT_EQ(ag_recv_block(r, n, s), ag_send_block(left, n, s));                // AG: recv == left's send
        EXPECT_EQ(rs_send_block(r, n, s), rs_recv_block(ring_mod(r + 1, n), n, s));  // send == right's recv
        EXPECT_EQ(ag_send_block(r, n, s), ag_recv_block(ring_mod(r + 1, n), n, s));
        if (s + 1 <= n - 2) {
          EXPECT_EQ(rs_send_block(r, n, s + 1), rs_recv_block(r, n, s));  // RS forwards what it reduced
          EXPECT_EQ(ag_send_block(r, n, s + 1), ag_recv_block(r, n, s));  // AG forwards what it got
        }
        ++rs[rs_recv_block(r, n, s)];
        ++ag[ag_recv_block(r, n, s)];
      }
      EXPECT_EQ(rs_recv_block(r, n, n - 2), r);  // RS ends owning block r
      EXPECT_EQ(ag_send_block(r, n, 0), r);      // AG starts from the own block
      for (int b = 0; b < n; ++b) {
        // reduce-scatter receives every block but the one sent first; all-gather every block but r
        EXPECT_EQ(rs[b], b == rs_send_block(r, n, 0) ? 0 : 1) << "n=" << n << " r=" << r << " block " << b;
        EXPECT_EQ(ag[b], b == r ? 0 : 1) << "n=" << n << " r=" << r << " block " << b;
      }
    }
  }
}

// The formulas themselves, at one point (n = 4, rank 1, docs/allreduce.md's diagram): reduce-scatter
// step s sends block (r-s-1) and receives (r-s-2); all-gather sends (r-s) and receives (r-s-1).
TEST(RingSchedule, MatchesTheDiagram) {
  EXPECT_EQ(rs_send_block(1, 4, 0), 0);  // rank 1 sends a1 at step 0
  EXPECT_EQ(rs_recv_block(1, 4, 0), 3);  // and receives d0 from rank 0
  EXPECT_EQ(rs_send_block(1, 4, 1), 3);
  EXPECT_EQ(rs_recv_block(1, 4, 2), 1);  // ends with b (block 1) complete
  EXPECT_EQ(ag_send_block(1, 4, 0), 1);
  EXPECT_EQ(ag_recv_block(1, 4, 0), 0);
  EXPECT_EQ(ag_recv_block(1, 4, 2), 2);
}

}  // namespace
}  // namespace microddp::comm
