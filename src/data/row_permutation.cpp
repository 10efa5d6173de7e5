// row_permutation.cpp — the constructor: the domain's bit width and its split into halves.
#include "data/row_permutation.hpp"

#include <bit>

#include "core/error.hpp"

namespace microddp::data {

RowPermutation::RowPermutation(std::uint64_t seed, std::uint64_t stream, std::int64_t n)
    : seed_(seed), stream_(stream), n_(n) {
  MDDP_CHECK(n >= 0 && n <= kMaxRows, "a row permutation needs 0 <= n <= 2^62 rows, got " << n);
  // k = the bits of n - 1: the smallest 2^k >= n (so a walk leaves [0, n) with probability < 1/2).
  const int k = n <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n - 1)));
  hi_bits_ = k / 2;
  lo_bits_ = k - hi_bits_;
}

}  // namespace microddp::data
