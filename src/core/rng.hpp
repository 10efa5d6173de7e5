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

// Philox4x32 with 10 rounds; constants from the Random123 paper.
MDDP_HD_INLINE Philox4x32 philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3,
                                        std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * c0;
    const std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * c2;
    const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0;
    const std::uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return Philox4x32{{c0, c1, c2, c3}};
}

// 32 random bits for (seed, stream, counter).
MDDP_HD_INLINE std::uint32_t random_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  const Philox4x32 r = philox4x32_10(static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32),
                                     static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32),
                                     static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  return r.v[0];
}

// Uniform in (0, 1]: 24 random bits, never 0 (so log() in Box-Muller is finite).
MDDP_HD_INLINE float uniform01(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  return (static_cast<float>(random_bits(seed, stream, counter) >> 8) + 1.0f) * (1.0f / 16777216.0f);
}

// Standard normal via Box-Muller on one Philox block (two 32-bit words -> one normal).
MDDP_HD_INLINE float normal01(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  const Philox4x32 r = philox4x32_10(static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32),
                                     static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32),
                                     static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  const float u1 = (static_cast<float>(r.v[0] >> 8) + 1.0f) * (1.0f / 16777216.0f);
  const float u2 = static_cast<float>(r.v[1] >> 8) * (1.0f / 16777216.0f);
  return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

}  // namespace microddp::core
