// thread_order.cpp — permutations for CUDA_EMU_SCHEDULE (see thread_order.hpp).
#include "thread_order.hpp"

namespace cuda_emu {

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a tiny generator whose outputs are well mixed even for
// consecutive states, which is all a shuffle needs.
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t state = a ^ (b * 0xff51afd7ed558ccdull);
  return splitmix64(state);
}

void make_order(std::vector<unsigned>& order, unsigned n, Schedule schedule, std::uint64_t seed, std::uint64_t salt) {
  order.resize(n);
  for (unsigned i = 0; i < n; ++i) order[i] = schedule == Schedule::Reverse ? n - 1 - i : i;
  if (schedule != Schedule::Shuffle || n < 2) return;
  std::uint64_t state = mix(seed, salt);
  // Fisher-Yates; j = floor(r * (i + 1) / 2^32) from the top 32 bits of r (Lemire's multiply-shift:
  // a bias below 2^-22 for a block of 1024 threads, irrelevant for finding races).
  for (unsigned i = n - 1; i > 0; --i) {
    const std::uint64_t r = splitmix64(state) >> 32;
    const auto j = static_cast<unsigned>((r * (static_cast<std::uint64_t>(i) + 1)) >> 32);
    const unsigned t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}

}  // namespace cuda_emu
