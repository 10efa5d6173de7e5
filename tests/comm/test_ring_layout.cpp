// test_ring_layout.cpp — the ring's index arithmetic (ring_layout.hpp) as pure functions: chunks tile
// the buffer exactly for any count (0, < n, not divisible by n, large) and any n; lengths differ by
// at most one; segments tile every chunk; the ring schedule gives every rank every block exactly
// once (reduce-scatter ends with rank r owning block r; all-gather receives every other block).
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "comm/ring_layout.hpp"

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
  for (std::int64_t i = 0; i < 5; ++i) EXPECT_EQ(even_part(3, 5, i), (IndexRange{std::min<std::int64_t>(i, 3), i < 3 ? 1 : 0}));
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

// The schedule of ring_collectives.cpp: reduce-scatter step s sends block (r-s-1) and receives
// (r-s-2); what rank r receives at step s is what r-1 sends at step s, and the block r receives at
// step s is the one it forwards at step s+1. After n-1 steps rank r holds block r.
TEST(RingLayout, RingScheduleIsConsistent) {
  for (int n = 2; n <= 7; ++n) {
    for (int r = 0; r < n; ++r) {
      const int left = ring_mod(r - 1, n);
      std::set<int> ag_blocks;
      for (int s = 0; s <= n - 2; ++s) {
        EXPECT_EQ(ring_mod(r - s - 2, n), ring_mod(left - s - 1, n));  // RS: recv == left's send
        if (s + 1 <= n - 2) {
          EXPECT_EQ(ring_mod(r - s - 2, n), ring_mod(r - (s + 1) - 1, n));
        }
        EXPECT_EQ(ring_mod(r - s - 1, n), ring_mod(left - s, n));  // AG: recv == left's send
        ag_blocks.insert(ring_mod(r - s - 1, n));
      }
      EXPECT_EQ(ring_mod(r - (n - 2) - 2, n), r);  // RS ends owning block r
      EXPECT_EQ(ag_blocks.size(), static_cast<std::size_t>(n - 1));
      EXPECT_EQ(ag_blocks.count(r), 0u);  // AG receives every block but its own
    }
  }
}

}  // namespace
}  // namespace microddp::comm
