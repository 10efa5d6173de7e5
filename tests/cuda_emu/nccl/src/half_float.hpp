// half_float.hpp — IEEE binary16 (fp16) and bfloat16 <-> float conversions, for reductions on those
// types (they are accumulated in float).
//
// Contract: to-float conversions are exact. float -> fp16 / bf16 rounds to nearest, ties to even (as
// __float2half_rn / __float2bfloat16_rn), with overflow to infinity and fp16 subnormals; NaN stays NaN
// (quiet, sign kept). Values are raw 16-bit patterns (std::uint16_t).
#pragma once

#include <bit>
#include <cstdint>

namespace cuda_emu::nccl {

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return sign != 0 ? -v : v;
  }
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  return std::bit_cast<float>(sign | ((exp + (127 - 15)) << 23) | (mant << 13));
}

inline std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));  // NaN, quiet
  // 65520 = 65504 (largest fp16) + half an ulp: from there on, round to nearest even gives infinity.
  if (ax >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (ax < 0x38800000u) {                // below 2^-14: an fp16 subnormal (units of 2^-24) or zero
    if (ax <= 0x33000000u) return sign;  // <= 2^-25, half the smallest subnormal: ties to even -> 0
    const std::uint32_t e = ax >> 23;
    const std::uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;  // value = m * 2^(e - 150)
    const std::uint32_t shift = 126 - e;                   // k = m * 2^(e - 126), in [14, 24]
    std::uint32_t k = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (k & 1u) != 0)) ++k;
    return static_cast<std::uint16_t>(sign | k);
  }
  std::uint32_t h = ((ax >> 23) - (127 - 15)) << 10 | ((ax & 0x7FFFFFu) >> 13);
  const std::uint32_t rem = ax & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0)) ++h;  // a carry into the exponent is right
  return static_cast<std::uint16_t>(sign | h);
}

inline float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // NaN, quiet
  const std::uint32_t bias = 0x7FFFu + ((x >> 16) & 1u);  // round half to even on the dropped 16 bits
  return static_cast<std::uint16_t>((x + bias) >> 16);
}

}  // namespace cuda_emu::nccl
