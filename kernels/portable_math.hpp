// portable_math.hpp — float math that gives the same bits on the host and on a CUDA device: the
// Box-Muller normal of the synthetic data (data::SyntheticDataset), made by the CPU and by a kernel.
// Contract: every function is MDDP_HD inline and pure, and is built from IEEE operations that round
// once each: add, multiply, square root, exact integer <-> float conversions and bit moves.
//   * On a device each operation is an explicitly rounded intrinsic (__fadd_rn, __fmul_rn,
//     __fsqrt_rn): nvcc contracts a * b + c into one FMA by default (--fmad=true), which rounds once
//     where the host rounds twice, and its logf / cosf differ from glibc's in the last bits.
//   * On the host they are the plain operators; microddp_kernels compiles its users with
//     -ffp-contract=off (kernels/CMakeLists.txt), so no -march with FMA can contract them either.
// No libm: log and cos are range reductions plus polynomials evaluated in a fixed order.
// Accuracy against float64, over every input the generator gives them (2^24 each), asserted by
// tests/kernels/test_portable_math.cpp (measured maxima in parentheses):
//   log_u24:      ln(k / 2^24), k in [1, 2^24]      relative error < 1e-7   (8.1e-8, ~1.4 ulp)
//   cos_2pi_u24:  cos(2 pi k / 2^24), k in [0, 2^24) absolute error < 1e-7   (6.9e-8)
//   box_muller:   sqrt(-2 ln u1) cos(2 pi u2)        absolute error < 1.6e-6 (5.7e-7 over 2^22 blocks;
//                 the bound follows from the two above, |value| <= sqrt(48 ln 2) = 5.77)
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"
#include "core/rng.hpp"
#include "kernels/elementwise.hpp"  // float_bits, float_from_bits

namespace microddp::kernels {

// ---- operations rounded once, identically on host and device -------------------------------
MDDP_HD_INLINE float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
MDDP_HD_INLINE float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
MDDP_HD_INLINE float sqrt_rn(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);  // IEEE 754 requires sqrt to be correctly rounded: sqrtss/sqrtps, or glibc's
#endif
}
// k < 2^24 converts exactly; through int32 so SSE2 converts four at a time (cvtdq2ps).
MDDP_HD_INLINE float exact_float(std::uint32_t k) { return static_cast<float>(static_cast<std::int32_t>(k)); }

// ---- ln(k / 2^24), k in [1, 2^24] ----------------------------------------------------------
// k = 2^e m with m in [sqrt(1/2), sqrt(2)) (read from the bits of the exact float k), so
// ln(k / 2^24) = (e - 24) ln 2 + ln(1 + x), x = m - 1 in [-0.293, 0.415) (exact: Sterbenz).
// ln(1 + x) = x - x^2/2 + x^3 P(x), P of degree 7: a least-squares fit on 300 Chebyshev nodes
// weighted by x^2 (so it minimises the relative error of ln), coefficients rounded to float one at
// a time from the lowest with the rest refitted; approximation error 6.4e-9 relative, far below
// the float evaluation's rounding. ln 2 is split Cody-Waite style: kLn2Hi has 9 significant bits,
// so (e - 24) * kLn2Hi is exact for |e - 24| <= 24, and the small term goes in first.
// (Coefficients are literals, not arrays: a host constexpr array is not usable in device code.)
inline constexpr float kLn2Hi = 0.693359375f;             // 355 / 512
inline constexpr float kLn2Lo = -2.12194440e-4f;          // ln 2 - kLn2Hi, rounded to float
inline constexpr std::uint32_t kSqrt2Bits = 0x3fb504f4u;  // the first float above sqrt(2)

MDDP_HD_INLINE float log_u24(std::uint32_t k) {
  const std::uint32_t b = float_bits(exact_float(k));
  const std::uint32_t mant = (b & 0x007fffffu) | 0x3f800000u;  // m in [1, 2)
  const std::uint32_t high = mant >= kSqrt2Bits ? 1u : 0u;     // m >= sqrt(2): use m / 2, e + 1
  const float m = float_from_bits(mant - (high << 23));
  const std::int32_t e = static_cast<std::int32_t>(b >> 23) - 127 + static_cast<std::int32_t>(high) - 24;
  const float ef = static_cast<float>(e);
  const float x = add_rn(m, -1.0f);
  const float z = mul_rn(x, x);
  float p = -7.666336745e-02f;
  p = add_rn(mul_rn(p, x), 1.278962195e-01f);
  p = add_rn(mul_rn(p, x), -1.316087395e-01f);
  p = add_rn(mul_rn(p, x), 1.419726312e-01f);
  p = add_rn(mul_rn(p, x), -1.662277281e-01f);
  p = add_rn(mul_rn(p, x), 2.000144869e-01f);
  p = add_rn(mul_rn(p, x), -2.500084639e-01f);
  p = add_rn(mul_rn(p, x), 3.333332837e-01f);
  float y = mul_rn(mul_rn(x, z), p);
  y = add_rn(y, mul_rn(ef, kLn2Lo));
  y = add_rn(y, mul_rn(-0.5f, z));
  return add_rn(add_rn(x, y), mul_rn(ef, kLn2Hi));
}

// ---- cos(2 pi k / 2^24), k in [0, 2^24) ------------------------------------------------------
// Exact reduction on the integer: 4 k / 2^24 = q + f with q = round(4 k / 2^24) in [0, 4] and
// f in [-1/2, 1/2) a multiple of 2^-22, so cos(2 pi u) = cos(pi/2 (q + f)) is, by q mod 4,
// C(f), -S(f), -C(f), S(f) with C(f) = cos(pi f / 2) and S(f) = sin(pi f / 2) on |pi f / 2| <= pi/4.
// C(f) = 1 + z (c0 + z (c1 + z (c2 + z c3))), S(f) = f (s0 + z (s1 + z (s2 + z s3))), z = f^2: fits
// as for log (absolute error of C 4.8e-10 with weight z; relative error of S 2.8e-8, almost all of
// it s0 = pi/2 rounded to float). Both are computed and one is selected: no branch, so GCC
// vectorises the loops that call it.
MDDP_HD_INLINE float cos_2pi_u24(std::uint32_t k) {
  const std::uint32_t q = (k + (1u << 21)) >> 22;
  const float f = mul_rn(static_cast<float>(static_cast<std::int32_t>(k) - static_cast<std::int32_t>(q << 22)),
                         1.0f / 4194304.0f);  // exact: an integer below 2^22 times 2^-22
  const float z = mul_rn(f, f);
  float c = 8.966785390e-04f;
  c = add_rn(mul_rn(c, z), -2.085650340e-02f);
  c = add_rn(mul_rn(c, z), 2.536686361e-01f);
  c = add_rn(mul_rn(c, z), -1.233700514e+00f);
  c = add_rn(mul_rn(c, z), 1.0f);
  float s = -4.630818497e-03f;
  s = add_rn(mul_rn(s, z), 7.969274372e-02f);
  s = add_rn(mul_rn(s, z), -6.459650397e-01f);
  s = add_rn(mul_rn(s, z), 1.570796371e+00f);
  s = mul_rn(s, f);
  // Odd q takes S, q = 1 and 2 negate: as bit operations (a mask select and a sign-bit flip), which
  // GCC vectorises where it would not if-convert the equivalent ?: on floats.
  const std::uint32_t take_s = 0u - (q & 1u);
  const std::uint32_t sign = ((q + 1u) & 2u) << 30;
  return float_from_bits(((float_bits(s) & take_s) | (float_bits(c) & ~take_s)) ^ sign);
}

// ---- the standard normal ---------------------------------------------------------------------
// Box-Muller on two Philox words, with the 24-bit uniforms of core::normal01: u1 = (w0 >> 8) + 1
// over 2^24 in (0, 1], u2 = (w1 >> 8) over 2^24 in [0, 1). Only log and cos differ from normal01
// (which uses libm), so the two agree to a few ulp and have the same distribution.
MDDP_HD_INLINE float box_muller(std::uint32_t w0, std::uint32_t w1) {
  const float radius = sqrt_rn(mul_rn(-2.0f, log_u24((w0 >> 8) + 1u)));
  return mul_rn(radius, cos_2pi_u24(w1 >> 8));
}

// A standard normal that is a pure function of (seed, stream, counter), the same Philox block as
// core::normal01, and the same bits on every host and device.
MDDP_HD_INLINE float portable_normal01(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  const core::Philox4x32 r = core::philox_block(seed, stream, counter);
  return box_muller(r.v[0], r.v[1]);
}

}  // namespace microddp::kernels
