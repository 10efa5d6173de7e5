// row_permutation.hpp — a keyed pseudo-random permutation of [0, n) computed without state.
//
// Contract: RowPermutation(seed, stream, n)(i) is a pure function of (seed, stream, n, i): no table,
// no generator to advance, so any rank, thread or device computes any position of any epoch in O(1)
// (a few Philox blocks), and a run resumed mid-epoch on another world size sees the same order.
// It is a bijection of [0, n) (every row exactly once); inverse() undoes it.
//
// How: a Feistel network on the k-bit integers, 2^k >= n, whose round function is the Philox
// counter RNG of core/rng.hpp keyed by (seed, stream); values that land in [n, 2^k) are sent through
// the network again until they fall in [0, n) ("cycle walking", Black & Rogaway 2002): the
// restriction of a permutation of [0, 2^k) to [0, n) this way is again a permutation, and since
// 2^k < 2n a walk takes fewer than 2 passes on average. The same construction (a keyed index
// shuffle) is what stateless data pipelines use to shuffle without materialising the order.
// The halves may be unequal (k odd): round r maps (hi: h bits, lo: l bits) to (lo, hi ^ F_r(lo)),
// so the widths swap every round and each round stays invertible.
//
// The evaluation is marked MDDP_HD so that a kernel can take the object by value and compute
// positions on a GPU (no CUDA file includes it yet); the constructor (which checks n) is host code.
#pragma once

#include <cstdint>

#include "core/host_device.hpp"
#include "core/rng.hpp"

namespace microddp::data {

class RowPermutation {
 public:
  // Rounds of the Feistel network: 4 make a balanced network with random round functions a strong
  // pseudo-random permutation (Luby & Rackoff 1988); 2 more because the halves may differ by one
  // bit and small domains (a few bits per half) mix more slowly. Changing it changes every order.
  static constexpr int kRounds = 6;
  // Largest n: k <= 62 bits keeps every half below 32 bits (one Philox word per round).
  static constexpr std::int64_t kMaxRows = std::int64_t{1} << 62;

  // The permutation of [0, n) keyed by (seed, stream); 0 <= n <= kMaxRows (core::Error otherwise).
  RowPermutation(std::uint64_t seed, std::uint64_t stream, std::int64_t n);

  MDDP_HD std::int64_t size() const { return n_; }

  // Where position i goes: the row at position i. Requires 0 <= i < n (not checked: hot path).
  MDDP_HD_INLINE std::int64_t operator()(std::int64_t i) const {
    if (n_ <= 1) return i;
    std::uint64_t x = static_cast<std::uint64_t>(i);
    do x = forward(x);
    while (x >= static_cast<std::uint64_t>(n_));
    return static_cast<std::int64_t>(x);
  }

  // The position of row r: inverse()(operator()(i)) == i. Requires 0 <= r < n.
  MDDP_HD_INLINE std::int64_t inverse(std::int64_t r) const {
    if (n_ <= 1) return r;
    std::uint64_t x = static_cast<std::uint64_t>(r);
    do x = backward(x);
    while (x >= static_cast<std::uint64_t>(n_));
    return static_cast<std::int64_t>(x);
  }

 private:
  MDDP_HD_INLINE std::uint64_t mask(int bits) const { return (std::uint64_t{1} << bits) - 1; }
  // Round r's function of the (l-bit) low half, cut to h bits.
  MDDP_HD_INLINE std::uint64_t round_fn(int r, std::uint64_t lo, int h) const {
    return core::random_bits(seed_, stream_, (static_cast<std::uint64_t>(r) << 32) | lo) & mask(h);
  }
  // Round r reads (hi: h bits, lo: l bits) with (h, l) = (hi_bits_, lo_bits_) on even rounds and
  // swapped on odd ones, and writes (lo: l bits, hi ^ F_r(lo): h bits).
  MDDP_HD_INLINE int hi_width(int r) const { return r % 2 == 0 ? hi_bits_ : lo_bits_; }
  MDDP_HD_INLINE int lo_width(int r) const { return r % 2 == 0 ? lo_bits_ : hi_bits_; }
  MDDP_HD_INLINE std::uint64_t forward(std::uint64_t x) const {
    for (int r = 0; r < kRounds; ++r) {
      const int h = hi_width(r), l = lo_width(r);
      const std::uint64_t hi = x >> l, lo = x & mask(l);
      x = (lo << h) | (hi ^ round_fn(r, lo, h));
    }
    return x;
  }
  MDDP_HD_INLINE std::uint64_t backward(std::uint64_t x) const {
    for (int r = kRounds - 1; r >= 0; --r) {
      const int h = hi_width(r), l = lo_width(r);
      const std::uint64_t lo = x >> h, hi = (x & mask(h)) ^ round_fn(r, lo, h);
      x = (hi << l) | lo;
    }
    return x;
  }

  std::uint64_t seed_ = 0, stream_ = 0;
  std::int64_t n_ = 0;
  int hi_bits_ = 0, lo_bits_ = 0;  // k = hi_bits_ + lo_bits_, hi_bits_ = k / 2
};

}  // namespace microddp::data
