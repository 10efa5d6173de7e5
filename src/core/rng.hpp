// rng.hpp — deterministic counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
// Contract: every value is a pure function of (seed, stream, counter). There is no hidden state,
// so parameter i of layer l, or feature j of sample k, gets the same number on any rank, world
// size, thread count or device. Usable on host and device (MDDP_HD).
//   stream:  which random quantity (e.g. a parameter id or "data features")
//   counter: which element inside that quantity
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

namespace microddp::core {

struct Philox4x32 {
  std::uint32_t v[4];
};

// Philox4x32-10's constants (Random123 paper): the round multipliers and the key's Weyl increments.
inline constexpr std::uint32_t kPhiloxMul0 = 0xD2511F53u, kPhiloxMul1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kPhiloxWeyl0 = 0x9E3779B9u, kPhiloxWeyl1 = 0xBB67AE85u;
inline constexpr int kPhiloxRounds = 10;

// One round on the counter words with round key (k0, k1). Separate so that a host loop can run each
// round over many counters at once (arrays of words: GCC vectorises that; kernels/cpu).
MDDP_HD_INLINE void philox_round(std::uint32_t& c0, std::uint32_t& c1, std::uint32_t& c2, std::uint32_t& c3,
                                 std::uint32_t k0, std::uint32_t k1) {
  const std::uint64_t p0 = static_cast<std::uint64_t>(kPhiloxMul0) * c0;
  const std::uint64_t p1 = static_cast<std::uint64_t>(kPhiloxMul1) * c2;
  const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
  const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
  c0 = n0;
  c1 = static_cast<std::uint32_t>(p1);
  c2 = n2;
  c3 = static_cast<std::uint32_t>(p0);
}

// Philox4x32 with 10 rounds.
MDDP_HD_INLINE Philox4x32 philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3,
                                        std::uint32_t k0, std::uint32_t k1) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    philox_round(c0, c1, c2, c3, k0, k1);
    k0 += kPhiloxWeyl0;
    k1 += kPhiloxWeyl1;
  }
  return Philox4x32{{c0, c1, c2, c3}};
}

// The Philox block of (seed, stream, counter): counter in words 0-1, stream in 2-3, seed is the key.
MDDP_HD_INLINE Philox4x32 philox_block(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  return philox4x32_10(static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32),
                       static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32),
                       static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// 32 random bits for (seed, stream, counter).
MDDP_HD_INLINE std::uint32_t random_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  return philox_block(seed, stream, counter).v[0];
}

// Uniform in (0, 1]: 24 random bits, never 0 (so log() in Box-Muller is finite).
MDDP_HD_INLINE float uniform01(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  return (static_cast<float>(random_bits(seed, stream, counter) >> 8) + 1.0f) * (1.0f / 16777216.0f);
}

// Standard normal via Box-Muller on one Philox block (two 32-bit words -> one normal), with libm's
// logf / cosf: the same bits on every host with the same libm, not on a GPU. The synthetic data
// set uses kernels::portable_normal01 instead (kernels/portable_math.hpp): same block, same
// uniforms, log and cos of its own, the same bits on host and device.
MDDP_HD_INLINE float normal01(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  const Philox4x32 r = philox_block(seed, stream, counter);
  const float u1 = (static_cast<float>(r.v[0] >> 8) + 1.0f) * (1.0f / 16777216.0f);
  const float u2 = static_cast<float>(r.v[1] >> 8) * (1.0f / 16777216.0f);
  return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

}  // namespace microddp::core
