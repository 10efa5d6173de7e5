// test_collective_reference.cpp — the per-collective records (comm/collective_reference.hpp) that the
// exactness tests and `bench collectives` share, checked without MPI: every collective is simulated
// on host arrays for n simulated ranks (each rank's input from its record's init, reductions folded
// in several orders in f32, as a backend might), and the record's check must accept the result —
// up to kMaxExactRanks ranks, where every partial sum must still be exact in f32 — and reject a
// single wrong element. Also: where inputs and results live, the bus factors, and the test regime's
// values (the exactness suite's inputs, unchanged for every rank count it runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "comm/collective_reference.hpp"
#include "kernels/elementwise.hpp"

namespace microddp::comm {
namespace {

using core::TensorView;

CollectiveShape shape(int rank, int n, std::int64_t count, ReduceOp op = ReduceOp::Sum, int root = 0) {
  return CollectiveShape{rank, n, root, count, op};
}

std::vector<float> input_of(CollectiveKind kind, int rank, int n, std::int64_t elems, ReduceOp op = ReduceOp::Sum) {
  std::vector<float> v(static_cast<std::size_t>(elems));
  collective_record(kind).init(shape(rank, n, 0, op), TensorView::of(v.data(), elems));
  return v;
}

float combine(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::Max:
      return std::max(a, b);
    case ReduceOp::Min:
      return std::min(a, b);
    default:
      return a + b;
  }
}

// Element j of the reduction over ranks, in f32, folded from rank `first` around the ring (a backend
// may combine in any such order); Mean as Sum times fl(1/n), as the host backends do.
float fold(ReduceOp op, int n, int first, const std::vector<float>& per_rank) {
  float acc = per_rank[static_cast<std::size_t>(first)];
  for (int k = 1; k < n; ++k) acc = combine(op, acc, per_rank[static_cast<std::size_t>((first + k) % n)]);
  if (op == ReduceOp::Mean) acc *= static_cast<float>(1.0 / n);
  return acc;
}

TEST(CollectiveReference, ReductionsAreExactUpToTheLargestRankCount) {
  constexpr std::int64_t kCount = 23;  // not divisible by the rank counts below
  for (int n : {1, 2, 3, 5, 6, 7, 16, 17, 64, 1000, kMaxExactRanks}) {
    std::vector<std::vector<float>> in(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) in[static_cast<std::size_t>(r)] = input_of(CollectiveKind::AllReduce, r, n, kCount);
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Mean}) {
      for (int first : {0, n - 1, n / 2}) {
        std::vector<float> out(kCount), column(static_cast<std::size_t>(n));
        for (std::int64_t j = 0; j < kCount; ++j) {
          for (int r = 0; r < n; ++r)
            column[static_cast<std::size_t>(r)] = in[static_cast<std::size_t>(r)][static_cast<std::size_t>(j)];
          out[static_cast<std::size_t>(j)] = fold(op, n, first, column);
        }
        const CheckResult c = collective_record(CollectiveKind::AllReduce)
                                  .check(shape(0, n, kCount, op), TensorView::of(out.data(), kCount));
        EXPECT_EQ(c.wrong, 0) << "n=" << n << " op=" << reduce_op_name(op) << " first rank " << first << ": element "
                              << c.first_bad << " got " << c.first_got << " want " << c.first_want;
      }
    }
  }
}

TEST(CollectiveReference, ExactnessBoundIsTight) {
  // The largest sum (all-positive inputs beyond the test regime) stays below 2^24 exactly up to
  // kMaxExactRanks; one rank more and it does not.
  auto largest_sum = [](std::int64_t n) { return n * (n - 1) / 2 + 7 * n; };
  EXPECT_LT(largest_sum(kMaxExactRanks), std::int64_t{1} << 24);
  EXPECT_GE(largest_sum(kMaxExactRanks + 1), std::int64_t{1} << 24);
  for (int n : {1, 16, 17, 5000, kMaxExactRanks, 1 << 20}) {
    EXPECT_LT(data_value(n - 1, data_period(n) - 1, n), std::int64_t{1} << 24) << n;
    EXPECT_GE(data_value(0, 0, n), 1);
  }
}

TEST(CollectiveReference, DataMovementRoundTrips) {
  constexpr std::int64_t c = 5;  // per-rank block
  for (int n : {1, 3, 4, 17, 300}) {
    const int root = n - 1;
    // all_gather / gather: block q of the result is rank q's input.
    std::vector<float> gathered;
    for (int q = 0; q < n; ++q) {
      const auto b = input_of(CollectiveKind::AllGather, q, n, c);
      gathered.insert(gathered.end(), b.begin(), b.end());
    }
    for (CollectiveKind k : {CollectiveKind::AllGather, CollectiveKind::Gather}) {
      EXPECT_EQ(collective_record(k)
                    .check(shape(root, n, c, ReduceOp::Sum, root), TensorView::of(gathered.data(), n * c))
                    .wrong,
                0);
    }
    // scatter: rank r receives block r of the root's input; broadcast: everyone the root's buffer.
    const auto root_data = input_of(CollectiveKind::Scatter, root, n, n * c);
    for (int r = 0; r < n; ++r) {
      std::vector<float> mine(root_data.begin() + r * c, root_data.begin() + (r + 1) * c);
      EXPECT_EQ(collective_record(CollectiveKind::Scatter)
                    .check(shape(r, n, c, ReduceOp::Sum, root), TensorView::of(mine.data(), c))
                    .wrong,
                0);
      std::vector<float> buf = input_of(CollectiveKind::Broadcast, root, n, 3 * c);
      EXPECT_EQ(collective_record(CollectiveKind::Broadcast)
                    .check(shape(r, n, 3 * c, ReduceOp::Sum, root), TensorView::of(buf.data(), 3 * c))
                    .wrong,
                0);
    }
    // reduce_scatter: rank r gets the sum of block r.
    std::vector<float> sum(static_cast<std::size_t>(n * c), 0.0f);
    for (int q = 0; q < n; ++q) {
      const auto in = input_of(CollectiveKind::ReduceScatter, q, n, n * c);
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += in[i];
    }
    for (int r = 0; r < n; ++r) {
      std::vector<float> mine(sum.begin() + r * c, sum.begin() + (r + 1) * c);
      EXPECT_EQ(
          collective_record(CollectiveKind::ReduceScatter).check(shape(r, n, c), TensorView::of(mine.data(), c)).wrong,
          0);
    }
    // Ranks' data differ element by element, so a block from the wrong rank is caught.
    if (n > 1) {
      EXPECT_NE(data_value(0, 2, n), data_value(1, 2, n));
    }
  }
}

TEST(CollectiveReference, CheckFindsOneWrongElementInEveryDtype) {
  const int n = 3;
  std::vector<double> d(10);
  std::vector<std::int32_t> i32(10);
  std::vector<std::int64_t> i64(10);
  for (std::int64_t j = 0; j < 10; ++j) {
    d[static_cast<std::size_t>(j)] = reduce_expected<double>(ReduceOp::Max, n, j);
    i32[static_cast<std::size_t>(j)] = reduce_expected<std::int32_t>(ReduceOp::Max, n, j);
    i64[static_cast<std::size_t>(j)] = reduce_expected<std::int64_t>(ReduceOp::Max, n, j);
  }
  const auto& rec = collective_record(CollectiveKind::AllReduce);
  const CollectiveShape s = shape(1, n, 10, ReduceOp::Max);
  EXPECT_EQ(rec.check(s, TensorView::of(d.data(), 10)).wrong, 0);
  EXPECT_EQ(rec.check(s, TensorView::of(i32.data(), 10)).wrong, 0);
  EXPECT_EQ(rec.check(s, TensorView::of(i64.data(), 10)).wrong, 0);
  d[7] += 1;
  i32[0] -= 1;
  i64[9] = 0;
  CheckResult c = rec.check(s, TensorView::of(d.data(), 10));
  EXPECT_EQ(c.wrong, 1);
  EXPECT_EQ(c.first_bad, 7);
  EXPECT_EQ(c.first_want, reduce_expected<double>(ReduceOp::Max, n, 7));
  EXPECT_EQ(rec.check(s, TensorView::of(i32.data(), 10)).first_bad, 0);
  EXPECT_EQ(rec.check(s, TensorView::of(i64.data(), 10)).first_bad, 9);
  // The poison is no value a closed form produces.
  std::vector<float> poisoned(4);
  poison(TensorView::of(poisoned.data(), 4));
  EXPECT_EQ(
      collective_record(CollectiveKind::Broadcast).check(shape(0, 2, 4), TensorView::of(poisoned.data(), 4)).wrong, 4);
}

// f16 and bf16 (collective_reference.hpp's own inputs): a reduction folded in any ring order, each
// combination decoded, added in fp32 and rounded once to 16 bits (kernels::wire16_reduce_pair, our
// backends' way), gives the closed form bit for bit up to kMaxExact16Ranks ranks, and the data
// movement collectives' bits come back as sent. One flipped bit is found.
TEST(CollectiveReference, SixteenBitFloatsAreExact) {
  constexpr std::int64_t kCount = 23;
  for (core::DType t : {core::DType::F16, core::DType::BF16}) {
    const kernels::Wire16 f = t == core::DType::F16 ? kernels::Wire16::F16 : kernels::Wire16::BF16;
    for (int n : {1, 2, 3, 5, 16, 17, 100, kMaxExact16Ranks}) {
      std::vector<std::vector<std::uint16_t>> in(static_cast<std::size_t>(n), std::vector<std::uint16_t>(kCount));
      for (int r = 0; r < n; ++r) {
        collective_record(CollectiveKind::AllReduce)
            .init(shape(r, n, kCount), TensorView(in[static_cast<std::size_t>(r)].data(), kCount, t));
      }
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
        for (int first : {0, n - 1, n / 2}) {
          std::vector<std::uint16_t> out(kCount);
          for (std::int64_t j = 0; j < kCount; ++j) {
            std::uint16_t acc = in[static_cast<std::size_t>(first)][static_cast<std::size_t>(j)];
            for (int k = 1; k < n; ++k)
              acc = kernels::wire16_reduce_pair(
                  f, op, acc, in[static_cast<std::size_t>((first + k) % n)][static_cast<std::size_t>(j)]);
            out[static_cast<std::size_t>(j)] = acc;
          }
          const CheckResult c = collective_record(CollectiveKind::AllReduce)
                                    .check(shape(0, n, kCount, op), TensorView(out.data(), kCount, t));
          EXPECT_EQ(c.wrong, 0) << core::dtype_name(t) << " n=" << n << " op " << core::reduce_op_name(op)
                                << ": element " << c.first_bad << " got " << c.first_got << " want " << c.first_want;
          if (n == 3 && first == 0) {
            out[5] ^= 1;  // one bit
            EXPECT_EQ(collective_record(CollectiveKind::AllReduce)
                          .check(shape(0, n, kCount, op), TensorView(out.data(), kCount, t))
                          .first_bad,
                      5);
          }
        }
      }
      // all_gather: every rank's block, bits as sent.
      std::vector<std::uint16_t> gathered(static_cast<std::size_t>(n * kCount));
      for (int r = 0; r < n; ++r) {
        collective_record(CollectiveKind::AllGather)
            .init(shape(r, n, kCount), TensorView(gathered.data() + r * kCount, kCount, t));
      }
      EXPECT_EQ(collective_record(CollectiveKind::AllGather)
                    .check(shape(0, n, kCount), TensorView(gathered.data(), n * kCount, t))
                    .wrong,
                0)
          << core::dtype_name(t) << " n=" << n;
    }
    // Every bit pattern the data movement collectives send is a finite number >= 0 in both formats.
    for (std::int64_t v : {std::int64_t{0}, kBits16Period - 1, std::int64_t{1} << 24}) {
      EXPECT_TRUE(std::isfinite(kernels::wire16_decode(f, data_bits16(v))));
      EXPECT_GE(kernels::wire16_decode(f, data_bits16(v)), 0.0f);
    }
  }
}

TEST(CollectiveReference, WhereInputsAndResultsLive) {
  float a[8], b[8];
  const TensorView s = TensorView::of(a, 8), r = TensorView::of(b, 4);
  const CollectiveCall bcast{CollectiveKind::Broadcast, r, r, ReduceOp::Sum, 1, 0};
  EXPECT_EQ(reference_input(bcast, 1).data, b);  // the root's buffer
  EXPECT_EQ(reference_input(bcast, 0).count, 0);
  const CollectiveCall scatter{CollectiveKind::Scatter, s, r, ReduceOp::Sum, 0, 0};
  EXPECT_EQ(reference_input(scatter, 0).data, a);
  EXPECT_EQ(reference_input(scatter, 1).count, 0);
  EXPECT_EQ(reference_result(scatter, 1).data, b);
  const CollectiveCall gather{CollectiveKind::Gather, r, s, ReduceOp::Sum, 0, 0};
  EXPECT_EQ(reference_result(gather, 0).data, a);
  EXPECT_EQ(reference_result(gather, 1).count, 0);  // non-roots have no result
  EXPECT_EQ(reference_input(gather, 1).data, b);
}

TEST(CollectiveReference, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(collective_record(CollectiveKind::AllReduce).bus_factor(4), 1.5);
  for (CollectiveKind k :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::Gather, CollectiveKind::Scatter}) {
    EXPECT_DOUBLE_EQ(collective_record(k).bus_factor(4), 0.75);
  }
  EXPECT_DOUBLE_EQ(collective_record(CollectiveKind::Broadcast).bus_factor(4), 1.0);
  EXPECT_EQ(collective_record(CollectiveKind::Barrier).kind, CollectiveKind::Barrier);
}

TEST(CollectiveReference, TestRegimeValuesAreTheSuitesOwn) {
  // Up to 16 ranks the values are the ones the exactness suite has always used: wide spread,
  // negative reduction inputs, a prime period for the data.
  for (int n = 1; n <= kTestRegimeRanks; ++n) {
    for (std::int64_t i : {0LL, 1LL, 976LL, 977LL, 999982LL, 999983LL, 1000003LL}) {
      for (int r : {0, n - 1}) {
        EXPECT_EQ(data_value(r, i, n), r * 1000000LL + i % 999983 + 1);
        EXPECT_EQ(reduce_input(r, i, n), ((r + i) % n) * 1000 - 2000 + i % 977);
      }
    }
  }
  EXPECT_LT(reduce_input(0, 0, 4), 0);  // signs are exercised
}

}  // namespace
}  // namespace microddp::comm
