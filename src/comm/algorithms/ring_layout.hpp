// ring_layout.hpp — pure index arithmetic of the hand-rolled ring algorithms (no MPI, unit-tested in
// tests/comm/algorithms/test_ring_layout.cpp).
//
// Contract:
//   * even_part(total, parts, i) splits [0, total) into `parts` contiguous ranges whose lengths differ
//     by at most one (the first total % parts ranges get the extra element). Any total >= 0 works,
//     including total < parts (some ranges are empty) and total == 0. Ranges tile [0, total) in order.
//   * The ring all-reduce cuts the buffer into n chunks with even_part(count, n, b), and every chunk
//     into the same number of pipeline segments, ring_segments(...), again with even_part. Every rank
//     computes identical boundaries from (count, n, segment bytes) alone, so sender and receiver of a
//     segment always agree on its length and both skip empty ones.
//   * ring_mod(a, n) is the non-negative remainder (ranks and block indices wrap around the ring).
#pragma once

#include <algorithm>
#include <cstdint>

namespace microddp::comm {

struct IndexRange {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  friend bool operator==(const IndexRange&, const IndexRange&) = default;
};

constexpr IndexRange even_part(std::int64_t total, std::int64_t parts, std::int64_t i) {
  const std::int64_t q = total / parts, rem = total % parts;
  return {i * q + std::min(i, rem), q + (i < rem ? 1 : 0)};
}

constexpr int ring_mod(std::int64_t a, int n) { return static_cast<int>(((a % n) + n) % n); }

// Pipeline segments per chunk: enough that no segment exceeds segment_bytes (at least 1).
// max_chunk_count is the longest chunk (even_part(count, n, 0).count).
constexpr std::int64_t ring_segments(std::int64_t max_chunk_count, std::int64_t elem_bytes,
                                     std::int64_t segment_bytes) {
  const std::int64_t bytes = max_chunk_count * elem_bytes;
  return std::max<std::int64_t>(1, (bytes + segment_bytes - 1) / segment_bytes);
}

// Largest power of two <= n (n >= 1): the core of recursive doubling; the n - p extra ranks fold in.
constexpr int floor_pow2(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

}  // namespace microddp::comm
