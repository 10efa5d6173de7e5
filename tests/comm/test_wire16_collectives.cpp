// test_wire16_collectives.cpp — all-reduce of 16-bit data (fp16, bf16: gradient compression's wire
// formats) on every backend, against independent references.
//
//   * Exact: small integers whose every partial sum is representable in 16 bits give the exact sum
//     (bitwise), in place and out of place, sizes 0, 1, < ranks, not divisible by ranks, large.
//   * Rounding bound: random values; every combining step decodes, adds in fp32 and rounds once to
//     16 bits, so the result is within (n - 1) * u * sum |x_i| of the float64 sum (u = 2^-11 fp16,
//     2^-8 bf16; docs/compression.md "How many roundings").
//   * fp16 overflow: a sum beyond 65504 is +inf on every rank (never a silently finite value).
//   * Every rank holds the same bits.
// Arguments: --backend=NAME (default mpi).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/factory.hpp"
#include "core/rng.hpp"
#include "kernels/elementwise.hpp"
#include "support/mpi_test_env.hpp"
#include "support/test_args.hpp"

namespace microddp::comm {
namespace {

using kernels::Wire16;

core::DType dtype_of(Wire16 f) { return f == Wire16::F16 ? core::DType::F16 : core::DType::BF16; }
double unit_roundoff(Wire16 f) { return f == Wire16::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8); }

// Every rank must hold rank 0's bits.
void expect_same_on_all_ranks(Communicator& comm, const std::vector<std::uint16_t>& v) {
  const auto n = static_cast<std::int64_t>(v.size());
  std::vector<std::int32_t> mine(v.begin(), v.end()), all(static_cast<std::size_t>(n * comm.size()));
  comm.all_gather(core::TensorView::of(mine.data(), n), core::TensorView::of(all.data(), n * comm.size()));
  for (int r = 1; r < comm.size(); ++r) {
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(all[static_cast<std::size_t>(r * n + i)], all[static_cast<std::size_t>(i)])
          << "rank " << r << " element " << i;
    }
  }
}

TEST(Wire16Collectives, ExactOnRepresentableSums) {
  auto comm = make_communicator(testing::backend_arg(), testing::runtime());
  const int n = comm->size(), rank = comm->rank();
  for (Wire16 f : {Wire16::F16, Wire16::BF16}) {
    for (std::int64_t count :
         {std::int64_t{0}, std::int64_t{1}, std::int64_t{n - 1}, std::int64_t{1001}, std::int64_t{70001}}) {
      for (bool in_place : {true, false}) {
        SCOPED_TRACE(std::string(f == Wire16::F16 ? "fp16" : "bf16") + " count " + std::to_string(count) +
                     (in_place ? " in place" : ""));
        // Integers in [-8, 8]: every partial sum of up to 4 ranks is within +-32, exact in both formats.
        auto value = [](int r, std::int64_t i) { return static_cast<float>((i * 7 + r * 3) % 17 - 8); };
        std::vector<std::uint16_t> x(static_cast<std::size_t>(count)), out(static_cast<std::size_t>(count), 0xFFFF);
        for (std::int64_t i = 0; i < count; ++i)
          x[static_cast<std::size_t>(i)] = kernels::wire16_encode(f, value(rank, i));
        const core::TensorView xv(x.data(), count, dtype_of(f));
        if (in_place) {
          comm->all_reduce(xv, core::ReduceOp::Sum);
          out = x;
        } else {
          comm->all_reduce(xv, core::TensorView(out.data(), count, dtype_of(f)), core::ReduceOp::Sum);
        }
        for (std::int64_t i = 0; i < count; ++i) {
          float want = 0.0f;
          for (int r = 0; r < n; ++r) want += value(r, i);
          ASSERT_EQ(out[static_cast<std::size_t>(i)], kernels::wire16_encode(f, want)) << "element " << i;
        }
        expect_same_on_all_ranks(*comm, out);
      }
    }
  }
}

TEST(Wire16Collectives, RoundingBound) {
  auto comm = make_communicator(testing::backend_arg(), testing::runtime());
  const int n = comm->size(), rank = comm->rank();
  const std::int64_t count = 50003;
  for (Wire16 f : {Wire16::F16, Wire16::BF16}) {
    auto value = [f](int r, std::int64_t i) {  // the encoded input of rank r, decoded (exact)
      return kernels::wire16_decode(f, kernels::wire16_encode(f, core::normal01(21, static_cast<std::uint64_t>(r),
                                                                                static_cast<std::uint64_t>(i))));
    };
    std::vector<std::uint16_t> x(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) x[static_cast<std::size_t>(i)] = kernels::wire16_encode(f, value(rank, i));
    comm->all_reduce(core::TensorView(x.data(), count, dtype_of(f)), core::ReduceOp::Sum);
    double worst = 0.0;  // largest error in units of (n - 1) u sum|x|
    for (std::int64_t i = 0; i < count; ++i) {
      double exact = 0.0, abs_sum = 0.0;
      for (int r = 0; r < n; ++r) {
        exact += value(r, i);
        abs_sum += std::abs(static_cast<double>(value(r, i)));
      }
      const double got = kernels::wire16_decode(f, x[static_cast<std::size_t>(i)]);
      const double bound = (n - 1) * unit_roundoff(f) * abs_sum;
      if (n == 1) {
        ASSERT_EQ(got, exact) << i;
      } else {
        // 1e-3 slack: the fp32 additions' own rounding (2^-24 each, when exponents differ by > 16).
        ASSERT_LE(std::abs(got - exact), bound * (1.0 + 1e-3)) << "element " << i;
        if (bound > 0) worst = std::max(worst, std::abs(got - exact) / bound);
      }
    }
    if (rank == 0)
      std::printf("# %s, %d ranks: largest error %.3f of the (n-1) u sum|x| bound\n",
                  f == Wire16::F16 ? "fp16" : "bf16", n, worst);
    expect_same_on_all_ranks(*comm, x);
  }
}

TEST(Wire16Collectives, Fp16OverflowIsInfinityOnEveryRank) {
  auto comm = make_communicator(testing::backend_arg(), testing::runtime());
  if (comm->size() < 2) GTEST_SKIP() << "needs two ranks for a sum beyond the range";
  std::vector<std::uint16_t> x(5, kernels::float_to_f16_bits(40000.0f));  // each finite, the sum is not
  comm->all_reduce(core::TensorView(x.data(), 5, core::DType::F16), core::ReduceOp::Sum);
  for (std::uint16_t v : x) EXPECT_EQ(v, 0x7C00u);  // +inf
}

}  // namespace
}  // namespace microddp::comm
