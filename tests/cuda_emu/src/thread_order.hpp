// thread_order.hpp — the order in which the emulator runs the threads of a block between two
// synchronisations, and the blocks of a grid (CUDA_EMU_SCHEDULE).
// Contract: make_order fills `order` with a permutation of [0, n): 0..n-1 (forward), n-1..0
// (reverse), or a shuffle that is a pure function of (seed, salt), so a failing order can be
// replayed. A GPU promises no order at all; code whose result depends on one has a race, and
// running it in several orders is how the emulator makes such a race change the result.
#pragma once

#include <cstdint>
#include <vector>

#include "config.hpp"

namespace cuda_emu {

void make_order(std::vector<unsigned>& order, unsigned n, Schedule schedule, std::uint64_t seed, std::uint64_t salt);

// A well-mixed 64-bit hash of two words (for salts: block index, pass number, ...).
std::uint64_t mix(std::uint64_t a, std::uint64_t b);

}  // namespace cuda_emu
