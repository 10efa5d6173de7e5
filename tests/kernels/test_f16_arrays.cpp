// test_f16_arrays.cpp — the F16C array conversions (kernels/cpu/f16_arrays.hpp) against the scalar
// element functions of elementwise.hpp (themselves checked against all 65536 fp16 patterns in
// test_elementwise.cpp): bit-identical dst, residual and sums, including NaN, inf, overflow,
// subnormals, exact ties of the rounding, and lengths that are not multiples of the vector width.
// Skipped (with the reason) on a processor without F16C, where only the scalar path runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/f16_arrays.hpp"
#include "kernels/elementwise.hpp"

namespace microddp::kernels {
namespace {

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
float float_of(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// The float inputs that decide fp16 rounding: every sign and exponent, with every pattern of the 14
// low significand bits (the 13 dropped bits and the one above, for normal halves) under four
// patterns of the high bits; exact ties (and their neighbours) of the subnormal halves, whose
// rounding point moves up to bit 23; and random patterns.
std::vector<float> rounding_inputs() {
  std::vector<float> v;
  v.reserve(36u << 20);
  for (std::uint32_t se = 0; se < 512; ++se) {
    for (std::uint32_t hi : {0x000u, 0x1ffu, 0x155u, 0x0aau}) {
      for (std::uint32_t lo = 0; lo < (1u << 14); ++lo) v.push_back(float_of((se << 23) | (hi << 14) | lo));
    }
  }
  std::mt19937 rng(12345);
  for (std::uint32_t e = 102; e <= 112; ++e) {  // subnormal halves: shift = 126 - e = 14 .. 24
    const std::uint32_t shift = 126 - e, halfway = 1u << (shift - 1);
    for (int k = 0; k < 2000; ++k) {
      const std::uint32_t m = (1u << 23) | (static_cast<std::uint32_t>(rng()) & ((1u << 23) - 1));
      const std::uint32_t base = m & ~((1u << shift) - 1);
      for (std::uint32_t rem : {halfway - 1, halfway, halfway + 1}) {
        const std::uint32_t mm = (base | rem) & 0x7fffffu;
        for (std::uint32_t sign : {0u, 0x80000000u}) v.push_back(float_of(sign | (e << 23) | mm));
      }
    }
  }
  for (int k = 0; k < (1 << 22); ++k) v.push_back(float_of(static_cast<std::uint32_t>(rng())));
  return v;
}

// First index where two bit arrays differ, or -1.
template <typename T>
std::int64_t first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<std::int64_t>(i);
  }
  return -1;
}

#define SKIP_WITHOUT_F16C()                                                                        \
  do {                                                                                             \
    if (!f16_simd_supported()) GTEST_SKIP() << "this processor has no AVX+F16C: only the scalar path runs"; \
  } while (0)

TEST(F16Arrays, EncodeIsBitIdenticalToTheScalarRounding) {
  SKIP_WITHOUT_F16C();
  const std::vector<float> x = rounding_inputs();
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<std::uint16_t> h_simd(x.size()), h_ref(x.size());
  std::vector<float> r_simd(x.size()), r_ref(x.size());
  f16_encode_array_simd(x.data(), h_simd.data(), nullptr, n);
  f16_encode_array_scalar(x.data(), h_ref.data(), nullptr, n);
  std::int64_t i = first_difference(h_simd, h_ref);
  ASSERT_EQ(i, -1) << "input bits 0x" << std::hex << bits_of(x[static_cast<std::size_t>(i)]) << ": F16C gave 0x"
                   << h_simd[static_cast<std::size_t>(i)] << ", scalar 0x" << h_ref[static_cast<std::size_t>(i)];
  // With the residual (error feedback): the same halves, and the same residual bits.
  f16_encode_array_simd(x.data(), h_simd.data(), r_simd.data(), n);
  f16_encode_array_scalar(x.data(), h_ref.data(), r_ref.data(), n);
  ASSERT_EQ(first_difference(h_simd, h_ref), -1);
  i = first_difference(r_simd, r_ref);
  ASSERT_EQ(i, -1) << "input bits 0x" << std::hex << bits_of(x[static_cast<std::size_t>(i)]) << ": residual 0x"
                   << bits_of(r_simd[static_cast<std::size_t>(i)]) << " vs 0x" << bits_of(r_ref[static_cast<std::size_t>(i)]);
}

TEST(F16Arrays, DecodeIsBitIdenticalForEveryHalf) {
  SKIP_WITHOUT_F16C();
  std::vector<std::uint16_t> h(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<std::uint16_t>(i);
  std::vector<float> simd(h.size()), ref(h.size());
  f16_decode_array_simd(h.data(), simd.data(), 65536);
  f16_decode_array_scalar(h.data(), ref.data(), 65536);
  const std::int64_t i = first_difference(simd, ref);
  ASSERT_EQ(i, -1) << "half 0x" << std::hex << i << ": F16C gave 0x" << bits_of(simd[static_cast<std::size_t>(i)])
                   << ", scalar 0x" << bits_of(ref[static_cast<std::size_t>(i)]);
}

TEST(F16Arrays, SumIsBitIdenticalIncludingInPlace) {
  SKIP_WITHOUT_F16C();
  // Every half against specials (±0, ±inf, NaN, signalling NaN, ±65504, the smallest subnormal and
  // normal) and random halves: overflow to inf, inf + -inf, NaN operands, ties after the addition.
  std::vector<std::uint16_t> others = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0x7bff, 0xfbff,
                                       0x0001, 0x8001, 0x0400, 0x3c00, 0xbc00};
  std::mt19937 rng(7);
  while (others.size() < 48) others.push_back(static_cast<std::uint16_t>(rng()));
  std::vector<std::uint16_t> a, b;
  for (std::uint16_t o : others) {
    for (std::uint32_t i = 0; i < 65536; ++i) {
      a.push_back(static_cast<std::uint16_t>(i));
      b.push_back(o);
    }
  }
  const auto n = static_cast<std::int64_t>(a.size());
  std::vector<std::uint16_t> simd(a.size()), ref(a.size());
  f16_sum_array_simd(simd.data(), a.data(), b.data(), n);
  f16_sum_array_scalar(ref.data(), a.data(), b.data(), n);
  const std::int64_t i = first_difference(simd, ref);
  ASSERT_EQ(i, -1) << std::hex << "0x" << a[static_cast<std::size_t>(i)] << " + 0x" << b[static_cast<std::size_t>(i)]
                   << ": F16C gave 0x" << simd[static_cast<std::size_t>(i)] << ", scalar 0x" << ref[static_cast<std::size_t>(i)];
  std::vector<std::uint16_t> in_place = a;  // dst aliases a (the MPI op and the ring reduce in place)
  f16_sum_array_simd(in_place.data(), in_place.data(), b.data(), n);
  EXPECT_EQ(first_difference(in_place, ref), -1);
}

TEST(F16Arrays, TailsAndTheDispatchAgreeWithTheScalarCode) {
  // Lengths around the vector width, a NaN inside a vector block; the dispatching functions (what
  // the program calls) equal the scalar ones whatever the processor.
  for (std::int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 100}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = 0.1f * static_cast<float>(i) - 3.3f;
    if (n > 10) x[10] = float_of(0x7f812345u);  // a signalling NaN with a payload
    std::vector<std::uint16_t> h(x.size()), h_ref(x.size());
    std::vector<float> r(x.size()), r_ref(x.size()), d(x.size()), d_ref(x.size());
    f16_encode_array(x.data(), h.data(), r.data(), n);
    f16_encode_array_scalar(x.data(), h_ref.data(), r_ref.data(), n);
    EXPECT_EQ(first_difference(h, h_ref), -1) << "n " << n;
    EXPECT_EQ(first_difference(r, r_ref), -1) << "n " << n;
    f16_decode_array(h.data(), d.data(), n);
    f16_decode_array_scalar(h.data(), d_ref.data(), n);
    EXPECT_EQ(first_difference(d, d_ref), -1) << "n " << n;
    std::vector<std::uint16_t> s(x.size()), s_ref(x.size());
    f16_sum_array(s.data(), h.data(), h_ref.data(), n);
    f16_sum_array_scalar(s_ref.data(), h.data(), h_ref.data(), n);
    EXPECT_EQ(first_difference(s, s_ref), -1) << "n " << n;
    if (n > 10) {
      EXPECT_EQ(h[10], 0x7e00) << "a NaN encodes to the canonical quiet NaN";
    }
  }
}

}  // namespace
}  // namespace microddp::kernels
