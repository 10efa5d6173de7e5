// test_elementwise.cpp — the shared per-element functions of elementwise.hpp that the CUDA kernels
// run too: ReLU and its gradient, the softmax cross-entropy pieces, and fp32 <-> bf16 conversion
// (bit patterns worked out by hand: bf16 = the top 16 bits of a float32, rounded to nearest even).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/elementwise.hpp"

namespace microddp::kernels {
namespace {

TEST(Elementwise, Relu) {
  EXPECT_EQ(relu(2.5f), 2.5f);
  EXPECT_EQ(relu(-1.0f), 0.0f);
  EXPECT_EQ(relu(0.0f), 0.0f);
  EXPECT_EQ(relu_backward(3.0f, 0.5f), 3.0f);
  EXPECT_EQ(relu_backward(3.0f, 0.0f), 0.0f);  // y == 0: the unit was off (x <= 0)
}

TEST(Elementwise, XentPieces) {
  // Row x = (1, 2, 3), label 0: M = 3, e = (e^-2, e^-1, 1), S = 1 + e^-1 + e^-2 = 1.503214724.
  const double s = 1.0 + std::exp(-1.0) + std::exp(-2.0);
  EXPECT_EQ(xent_max(1.0f, 3.0f), 3.0f);
  // expf/logf are within 1 ulp (glibc); 2 ulp of values <= 2.5 is < 5e-7.
  EXPECT_NEAR(xent_exp(1.0f, 3.0f), std::exp(-2.0), 5e-7);
  // loss = (3 - 1) + log S = 2.407605964
  EXPECT_NEAR(xent_row_loss(1.0f, 3.0f, static_cast<float>(s)), 2.0 + std::log(s), 5e-7);
  // dx_0 = scale * (e^-2 / S - 1), scale 0.5: 0.5 * (0.090030573 - 1) = -0.454984714
  EXPECT_NEAR(xent_grad(static_cast<float>(std::exp(-2.0)), static_cast<float>(1.0 / s), true, 0.5f),
              0.5 * (std::exp(-2.0) / s - 1.0), 5e-7);
  EXPECT_NEAR(xent_grad(1.0f, static_cast<float>(1.0 / s), false, 0.5f), 0.5 / s, 5e-7);
  EXPECT_TRUE(xent_label_ok(0, 3));
  EXPECT_TRUE(xent_label_ok(2, 3));
  EXPECT_FALSE(xent_label_ok(3, 3));
  EXPECT_FALSE(xent_label_ok(-1, 3));
}

TEST(Elementwise, Bf16RoundsToNearestEven) {
  // 1.0f = 0x3F800000 -> 0x3F80 exactly.
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80u);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xC000u);
  EXPECT_EQ(float_to_bf16_bits(0.0f), 0x0000u);
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000u);
  // Halfway cases (low 16 bits = 0x8000) go to the even neighbour:
  //   0x3F808000: neighbours 0x3F80 (even) and 0x3F81 -> 0x3F80
  //   0x3F818000: neighbours 0x3F81 and 0x3F82 (even) -> 0x3F82
  EXPECT_EQ(float_to_bf16_bits(float_from_bits(0x3F808000u)), 0x3F80u);
  EXPECT_EQ(float_to_bf16_bits(float_from_bits(0x3F818000u)), 0x3F82u);
  // Above / below halfway round up / down.
  EXPECT_EQ(float_to_bf16_bits(float_from_bits(0x3F808001u)), 0x3F81u);
  EXPECT_EQ(float_to_bf16_bits(float_from_bits(0x3F807FFFu)), 0x3F80u);
  // Carry into the exponent: 0x3FFFFFFF (1.99999988) -> 0x4000 (2.0).
  EXPECT_EQ(float_to_bf16_bits(float_from_bits(0x3FFFFFFFu)), 0x4000u);
  // FLT_MAX = 0x7F7FFFFF rounds up past bf16's largest finite (0x7F7F) to +inf (0x7F80).
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80u);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7F80u);
  EXPECT_EQ(float_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xFF80u);
  // A NaN whose payload lives only in the low 16 bits (0x7F800001) must not become inf.
  const std::uint16_t nan_bits = float_to_bf16_bits(float_from_bits(0x7F800001u));
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(nan_bits)));
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Elementwise, Bf16ToFloatIsExactAndRoundTrips) {
  EXPECT_EQ(bf16_bits_to_float(0x3F80u), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(0x4049u), 3.140625f);  // 0x40490000 = 3.140625
  // Every finite bf16 value converts to float and back to the same bits (float holds bf16 exactly).
  for (std::uint32_t b = 0; b <= 0xFFFFu; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float f = bf16_bits_to_float(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16_bits(f), bits) << std::hex << b;
  }
  // Relative error of fp32 -> bf16 is at most 2^-9 (8 significant bits, round to nearest).
  for (float x : {0.1f, 3.14159265f, -123.456f, 1e-20f, 6.5e4f}) {
    EXPECT_LE(std::fabs(bf16_bits_to_float(float_to_bf16_bits(x)) - x), std::ldexp(std::fabs(x), -9)) << x;
  }
}

// fp16 (1 sign, 5 exponent bits with bias 15, 10 significand bits), bit patterns by hand.
TEST(Elementwise, F16RoundsToNearestEven) {
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3C00u);
  EXPECT_EQ(float_to_f16_bits(-2.0f), 0xC000u);
  EXPECT_EQ(float_to_f16_bits(0.0f), 0x0000u);
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000u);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7BFFu);  // largest finite
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7BFFu);  // below the halfway point 65520
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7C00u);  // the tie goes to the even neighbour: inf
  EXPECT_EQ(float_to_f16_bits(-1e6f), 0xFC00u);
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400u);  // smallest normal
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001u);  // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000u);  // tie between 0 and 2^-24: even (0)
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.5f, -25)), 0x0001u);  // above the tie
  EXPECT_EQ(float_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002u);  // 1.5 * 2^-24: tie, to even 2
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: to even (1); 1 + 3 * 2^-11: to 1 + 2^-9 (even).
  EXPECT_EQ(float_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00u);
  EXPECT_EQ(float_to_f16_bits(1.0f + std::ldexp(3.0f, -11)), 0x3C02u);
  // Subnormal rounding up into the smallest normal: (2^-14 - 2^-26) -> 2^-14.
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400u);
  EXPECT_EQ(float_to_f16_bits(std::numeric_limits<float>::infinity()), 0x7C00u);
  const std::uint16_t nan = float_to_f16_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00u, 0x7C00u);
  EXPECT_NE(nan & 0x03FFu, 0u);
}

// Every one of the 65536 half patterns decodes exactly and encodes back to itself (NaNs stay NaN);
// and decoding agrees with an independent formula in double.
TEST(Elementwise, F16RoundTripsEveryPattern) {
  for (std::uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const float f = f16_bits_to_float(b);
    const int e = static_cast<int>((h >> 10) & 0x1F), m = static_cast<int>(h & 0x3FF);
    const double sign = (h & 0x8000u) ? -1.0 : 1.0;
    if (e == 31) {
      EXPECT_TRUE(m == 0 ? std::isinf(f) : std::isnan(f)) << h;
      continue;
    }
    const double want = sign * (e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25));
    ASSERT_EQ(static_cast<double>(f), want) << h;
    ASSERT_EQ(float_to_f16_bits(f), b) << h;
  }
}

// The 16-bit wire helpers: encode with residual returns exactly x - decode(encode(x)), and one
// reduction hop adds in fp32 and rounds once.
TEST(Elementwise, Wire16ResidualAndReduceHop) {
  std::uint16_t w = 0;
  const float x = 1.0f + std::ldexp(1.0f, -12);  // not representable in fp16 (10 bits) or bf16 (7)
  EXPECT_EQ(wire16_encode_residual(Wire16::F16, x, &w), std::ldexp(1.0f, -12));
  EXPECT_EQ(w, 0x3C00u);
  EXPECT_EQ(wire16_encode_residual(Wire16::BF16, x, &w), std::ldexp(1.0f, -12));
  EXPECT_EQ(w, 0x3F80u);
  // bf16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7: one rounding of the fp32 sum gives 1 (even),
  // whereas adding 2^-9 twice in bf16 would round twice.
  const std::uint16_t one = float_to_bf16_bits(1.0f), tiny = float_to_bf16_bits(std::ldexp(1.0f, -8));
  EXPECT_EQ(wire16_reduce_pair(Wire16::BF16, core::ReduceOp::Sum, one, tiny), one);
  EXPECT_EQ(wire16_reduce_pair(Wire16::F16, core::ReduceOp::Sum, float_to_f16_bits(3.0f), float_to_f16_bits(4.0f)),
            float_to_f16_bits(7.0f));
  EXPECT_EQ(
      wire16_reduce_pair(Wire16::F16, core::ReduceOp::Sum, float_to_f16_bits(60000.0f), float_to_f16_bits(60000.0f)),
      0x7C00u);  // beyond fp16's range: inf, never a silently clipped value
}

}  // namespace
}  // namespace microddp::kernels
