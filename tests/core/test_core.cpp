// test_core.cpp — core utilities: Philox known answers, RNG distribution, errors, buffers, views,
// the event log's no-allocation contract.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/event_log.hpp"
#include "core/host_buffer.hpp"
#include "core/rng.hpp"
#include "core/tensor_view.hpp"

namespace microddp::core {
namespace {

TEST(Philox, KnownAnswerVectors) {
  // Known-answer tests published with Random123 (kat_vectors, philox4x32 with 10 rounds).
  Philox4x32 a = philox4x32_10(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(a.v[0], 0x6627e8d5u);
  EXPECT_EQ(a.v[1], 0xe169c58du);
  EXPECT_EQ(a.v[2], 0xbc57ac4cu);
  EXPECT_EQ(a.v[3], 0x9b00dbd8u);
  Philox4x32 b = philox4x32_10(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(b.v[0], 0x408f276du);
  EXPECT_EQ(b.v[1], 0x41c83b0eu);
  EXPECT_EQ(b.v[2], 0xa20bc7c6u);
  EXPECT_EQ(b.v[3], 0x6d5451fdu);
  Philox4x32 c = philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(c.v[0], 0xd16cfe09u);
  EXPECT_EQ(c.v[1], 0x94fdccebu);
  EXPECT_EQ(c.v[2], 0x5001e420u);
  EXPECT_EQ(c.v[3], 0x24126ea1u);
}

TEST(Rng, NormalHasUnitMomentsAndUniformStaysInRange) {
  const int n = 200000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = normal01(3, 9, static_cast<std::uint64_t>(i));
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sum2 += x * x;
    const float u = uniform01(3, 9, static_cast<std::uint64_t>(i));
    ASSERT_GT(u, 0.0f);
    ASSERT_LE(u, 1.0f);
  }
  // Standard errors: mean 1/sqrt(n) = 0.0022, variance sqrt(2/n) = 0.0032; 5 sigma bounds.
  EXPECT_NEAR(sum / n, 0.0, 0.012);
  EXPECT_NEAR(sum2 / n, 1.0, 0.016);
}

TEST(Rng, StreamsAndSeedsAreIndependentCounters) {
  EXPECT_EQ(random_bits(1, 2, 3), random_bits(1, 2, 3));
  EXPECT_NE(random_bits(1, 2, 3), random_bits(1, 2, 4));
  EXPECT_NE(random_bits(1, 2, 3), random_bits(1, 3, 3));
  EXPECT_NE(random_bits(1, 2, 3), random_bits(2, 2, 3));
  // High halves of 64-bit counter/stream/seed matter too.
  EXPECT_NE(random_bits(1, 2, 3), random_bits(1, 2, 3 + (1ull << 32)));
  EXPECT_NE(random_bits(1, 2, 3), random_bits(1, 2 + (1ull << 32), 3));
  EXPECT_NE(random_bits(1, 2, 3), random_bits(1 + (1ull << 32), 2, 3));
}

TEST(Errors, CheckCarriesMessageExpressionAndLocation) {
  set_error_rank(3);
  try {
    const int n = -1;
    MDDP_CHECK(n > 0, "n must be positive, got " << n);
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[rank 3]"), std::string::npos) << what;
    EXPECT_NE(what.find("n must be positive, got -1"), std::string::npos) << what;
    EXPECT_NE(what.find("n > 0"), std::string::npos) << what;
    EXPECT_NE(what.find("test_core.cpp:"), std::string::npos) << what;
  }
  set_error_rank(-1);
  EXPECT_THROW(MDDP_USAGE_CHECK(false, "bad"), UsageError);
}

TEST(HostBuffer, ZeroedAlignedMovable) {
  HostBuffer<float> b(1000);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
  for (float v : b) EXPECT_EQ(v, 0.0f);
  b[3] = 5.0f;
  HostBuffer<float> c(std::move(b));
  EXPECT_EQ(c[3], 5.0f);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(c.bytes(), 4000);
  EXPECT_THROW(HostBuffer<float>(-1), Error);
}

TEST(TensorView, SliceAndTypedAccessAreChecked) {
  HostBuffer<double> b(10);
  TensorView v = b.view();
  EXPECT_EQ(v.bytes(), 80);
  TensorView s = v.slice(2, 5);
  EXPECT_EQ(s.as<double>(), b.data() + 2);
  EXPECT_THROW(v.slice(8, 3), Error);
  EXPECT_THROW(v.as<float>(), Error);
}

TEST(EventLog, NeverGrowsPastReservedCapacity) {
  EventLog log(4);
  const auto* before = log.events().data();
  for (int i = 0; i < 10; ++i) log.record(EventKind::Forward, 0, i, i, i + 1);
  EXPECT_EQ(log.size(), 4u);
  EXPECT_EQ(log.dropped(), 6u);
  EXPECT_EQ(log.events().data(), before);  // no reallocation
  { ScopedEvent e(log, EventKind::Backward, 1); }
  EXPECT_EQ(log.dropped(), 7u);
}

}  // namespace
}  // namespace microddp::core
