// test_epoch_sampler.cpp — shuffled epochs and the validation split as pure functions:
//   * RowPermutation is a bijection of [0, n) for every n (small, odd bit widths, large), inverse()
//     undoes it, it depends only on (seed, stream, n), and it mixes (no fixed structure left);
//   * EpochSampler: each epoch reads every row at most once, exactly N - (N mod B) of them; the order
//     is a pure function of (seed, epoch) and differs between epochs; steps map to epochs by the
//     drop_last rule; B > N is refused; the ranks' shares of a step concatenate to the same global
//     batch at np 1, 2 and 3 (as data::Sampler splits it);
//   * TrainValSplit: disjoint, covering, the stated sizes, the same for every "world size", and bad
//     fractions refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "data/epoch_sampler.hpp"
#include "data/row_permutation.hpp"
#include "data/synthetic_dataset.hpp"
#include "data/train_val_split.hpp"

namespace microddp::data {
namespace {

std::vector<std::int64_t> all_of(const RowPermutation& p) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(p.size()));
  for (std::int64_t i = 0; i < p.size(); ++i) v[static_cast<std::size_t>(i)] = p(i);
  return v;
}

bool is_permutation_of_range(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != static_cast<std::int64_t>(i)) return false;
  }
  return true;
}

TEST(RowPermutation, IsABijectionForEverySize) {
  // 0 and 1 (trivial), 2, 3 (k = 1, 2), powers of two and their neighbours (no cycle walk / the
  // longest walks), odd bit widths (unequal halves), and a size of 2^20 + 1 (21 bits).
  for (std::int64_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 100, 127, 128, 129, 1000, 4095, 65537, 1048577}) {
    const RowPermutation p(7, 3, n);
    const auto v = all_of(p);
    ASSERT_TRUE(is_permutation_of_range(v)) << "n = " << n;
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(p.inverse(v[static_cast<std::size_t>(i)]), i) << "n = " << n;
  }
}

TEST(RowPermutation, LargeDomainStaysInRangeAndInverts) {
  // A few positions of a 2^40 + 3 row permutation (41 bits: halves of 20 and 21 bits).
  const std::int64_t n = (std::int64_t{1} << 40) + 3;
  const RowPermutation p(1, 2, n);
  for (std::int64_t i : {std::int64_t{0}, std::int64_t{1}, n / 2, n - 2, n - 1}) {
    const std::int64_t r = p(i);
    ASSERT_GE(r, 0);
    ASSERT_LT(r, n);
    EXPECT_EQ(p.inverse(r), i);
  }
}

TEST(RowPermutation, PureFunctionOfSeedStreamAndSize) {
  const auto a = all_of(RowPermutation(11, 5, 1000));
  EXPECT_EQ(a, all_of(RowPermutation(11, 5, 1000)));  // a fresh object: nothing carried between calls
  EXPECT_NE(a, all_of(RowPermutation(12, 5, 1000)));
  EXPECT_NE(a, all_of(RowPermutation(11, 6, 1000)));
  // Random access equals the sequential sweep, in any order.
  const RowPermutation p(11, 5, 1000);
  for (std::int64_t i = 999; i >= 0; i -= 7) EXPECT_EQ(p(i), a[static_cast<std::size_t>(i)]);
}

TEST(RowPermutation, Mixes) {
  // Loose statistical checks with fixed seeds (deterministic): over 2000 keys of a 1000-row
  // permutation, where row 0 and row 999 go is spread evenly over 10 bins (chi-square with 9 degrees
  // of freedom; 40 is far beyond its 99.99th percentile, ~33.7), and neighbours do not stay
  // neighbours (a uniform permutation keeps |P(i+1) - P(i)| == 1 for about 2 of 999 pairs).
  const std::int64_t n = 1000, keys = 2000;
  std::vector<double> bins_first(10, 0.0), bins_last(10, 0.0);
  std::int64_t adjacent = 0;
  for (std::int64_t k = 0; k < keys; ++k) {
    const auto v = all_of(RowPermutation(3, kEpochStream + static_cast<std::uint64_t>(k), n));
    bins_first[static_cast<std::size_t>(v.front() / 100)] += 1;
    bins_last[static_cast<std::size_t>(v.back() / 100)] += 1;
    for (std::size_t i = 0; i + 1 < v.size(); ++i) adjacent += std::abs(v[i + 1] - v[i]) == 1 ? 1 : 0;
  }
  for (const auto* bins : {&bins_first, &bins_last}) {
    double chi2 = 0;
    for (double b : *bins) chi2 += (b - keys / 10.0) * (b - keys / 10.0) / (keys / 10.0);
    EXPECT_LT(chi2, 40.0);
  }
  EXPECT_LT(static_cast<double>(adjacent) / static_cast<double>(keys), 4.0);
}

TEST(EpochSampler, EveryEpochReadsEachRowAtMostOnceAndDropsTheRest) {
  const std::int64_t n = 103, b = 10;  // 10 steps per epoch, 3 rows dropped per epoch
  const EpochSampler s(n, b, 42, true);
  EXPECT_EQ(s.steps_per_epoch(), 10);
  EXPECT_EQ(s.dropped_per_epoch(), 3);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(b));
  std::vector<std::vector<std::int64_t>> seen_by_epoch;
  for (std::int64_t epoch = 0; epoch < 4; ++epoch) {
    std::vector<int> seen(static_cast<std::size_t>(n), 0);
    for (std::int64_t k = 0; k < s.steps_per_epoch(); ++k) {
      const std::int64_t step = epoch * s.steps_per_epoch() + k;
      ASSERT_EQ(s.epoch_of(step), epoch);
      ASSERT_EQ(s.step_in_epoch(step), k);
      s.rows(step, 0, b, rows.data());
      for (auto r : rows) {
        ASSERT_GE(r, 0);
        ASSERT_LT(r, n);
        ++seen[static_cast<std::size_t>(r)];
      }
    }
    std::vector<std::int64_t> missed;
    for (std::int64_t r = 0; r < n; ++r) {
      ASSERT_LE(seen[static_cast<std::size_t>(r)], 1) << "row " << r << " twice in epoch " << epoch;
      if (seen[static_cast<std::size_t>(r)] == 0) missed.push_back(r);
    }
    EXPECT_EQ(static_cast<std::int64_t>(missed.size()), n % b);
    // The dropped rows are the last positions of the epoch's order.
    for (std::int64_t p = s.steps_per_epoch() * b; p < n; ++p) {
      EXPECT_TRUE(std::find(missed.begin(), missed.end(), s.at(epoch, p)) != missed.end());
    }
    seen_by_epoch.push_back(missed);
  }
  // The order changes between epochs, so do the rows left out.
  EXPECT_NE(seen_by_epoch[0], seen_by_epoch[1]);
}

TEST(EpochSampler, OrderIsAPureFunctionOfSeedAndEpoch) {
  const std::int64_t n = 500;
  auto epoch_order = [&](std::uint64_t seed, std::int64_t epoch) {
    const EpochSampler s(n, 50, seed, true);
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    for (std::int64_t p = 0; p < n; ++p) v[static_cast<std::size_t>(p)] = s.at(epoch, p);
    return v;
  };
  const auto e0 = epoch_order(9, 0), e1 = epoch_order(9, 1), e7 = epoch_order(9, 7);
  EXPECT_TRUE(is_permutation_of_range(e0));
  EXPECT_TRUE(is_permutation_of_range(e7));
  EXPECT_EQ(e0, epoch_order(9, 0));  // recomputed from scratch: same order
  EXPECT_EQ(e7, epoch_order(9, 7));  // epoch 7 needs no epochs before it (resume mid-run)
  EXPECT_NE(e0, e1);
  EXPECT_NE(e1, e7);
  EXPECT_NE(e0, epoch_order(10, 0));
  // A step reads the epoch's positions in order: step 13 with B = 50, S = 10 is step 3 of epoch 1.
  const EpochSampler s(n, 50, 9, true);
  for (std::int64_t i = 0; i < 50; ++i) EXPECT_EQ(s.row(13, i), e1[static_cast<std::size_t>(150 + i)]);
}

TEST(EpochSampler, ShuffleOffIsFileOrderEveryEpoch) {
  const EpochSampler s(25, 10, 9, false);  // 2 steps per epoch, rows 20..24 never read
  std::vector<std::int64_t> rows(10);
  s.rows(3, 0, 10, rows.data());  // step 1 of epoch 1
  for (std::int64_t i = 0; i < 10; ++i) EXPECT_EQ(rows[static_cast<std::size_t>(i)], 10 + i);
}

TEST(EpochSampler, RefusesABatchLargerThanTheTrainingSet) {
  EXPECT_NO_THROW(EpochSampler(500, 500, 1, true));  // exactly one step per epoch
  try {
    EpochSampler(500, 600, 1, true);
    FAIL() << "a 600-row batch of a 500-row training set was accepted";
  } catch (const core::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("global batch of 600 rows is larger than the training set of 500 rows"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(EpochSampler(0, 1, 1, true), core::UsageError);
}

TEST(EpochSampler, SameGlobalBatchAtAnyWorldSize) {
  // B = 7 does not divide by 2 or 3: ranks get 4/3 and 3/2/2 rows. Every step of three epochs.
  const std::int64_t n = 60, b = 7;
  const EpochSampler s(n, b, 5, true);
  for (std::int64_t step = 0; step < 3 * s.steps_per_epoch(); ++step) {
    std::vector<std::int64_t> global(static_cast<std::size_t>(b));
    s.rows(step, 0, b, global.data());
    for (int world : {1, 2, 3}) {
      std::vector<std::int64_t> joined;
      for (int rank = 0; rank < world; ++rank) {
        const Sampler share(b, rank, world);
        std::vector<std::int64_t> mine(static_cast<std::size_t>(share.local_count()));
        s.rows(step, share.local_offset(), share.local_count(), mine.data());
        joined.insert(joined.end(), mine.begin(), mine.end());
      }
      ASSERT_EQ(joined, global) << "step " << step << ", " << world << " ranks";
    }
  }
}

TEST(TrainValSplit, DisjointCoveringAndSized) {
  const std::int64_t n = 1001;
  const TrainValSplit split(n, 0.1, 17);
  EXPECT_EQ(split.val_rows(), 100);  // round(100.1)
  EXPECT_EQ(split.train_rows(), 901);
  std::vector<int> owner(static_cast<std::size_t>(n), 0);
  for (std::int64_t j = 0; j < split.val_rows(); ++j) {
    const std::int64_t r = split.val_row(j);
    ASSERT_TRUE(split.is_val(r));
    owner[static_cast<std::size_t>(r)] += 1;
  }
  for (std::int64_t t = 0; t < split.train_rows(); ++t) {
    const std::int64_t r = split.train_row(t);
    ASSERT_FALSE(split.is_val(r));
    owner[static_cast<std::size_t>(r)] += 10;
  }
  for (std::int64_t r = 0; r < n; ++r) {
    const int o = owner[static_cast<std::size_t>(r)];
    ASSERT_TRUE(o == 1 || o == 10) << "row " << r << ": " << o;  // exactly one side, once
  }
  // The validation rows are spread over the file, not a block at either end.
  std::int64_t first_half = 0;
  for (std::int64_t j = 0; j < split.val_rows(); ++j) first_half += split.val_row(j) < n / 2 ? 1 : 0;
  EXPECT_GT(first_half, 30);
  EXPECT_LT(first_half, 70);
}

TEST(TrainValSplit, SameOnEveryRankAndWorldSize) {
  // A pure function of (seed, N, fraction): "rank r of n" evaluating its contiguous shard of the
  // validation indices sees exactly its slice of the single-process list, for n = 1, 2, 3.
  const TrainValSplit split(777, 0.25, 3);
  std::vector<std::int64_t> all;
  for (std::int64_t j = 0; j < split.val_rows(); ++j) all.push_back(split.val_row(j));
  for (int world : {1, 2, 3}) {
    std::vector<std::int64_t> joined;
    for (int rank = 0; rank < world; ++rank) {
      const TrainValSplit mine(777, 0.25, 3);  // each rank builds its own
      const std::int64_t lo = mine.val_rows() * rank / world, hi = mine.val_rows() * (rank + 1) / world;
      for (std::int64_t j = lo; j < hi; ++j) joined.push_back(mine.val_row(j));
    }
    EXPECT_EQ(joined, all) << world << " ranks";
  }
  EXPECT_NE(all[0], TrainValSplit(777, 0.25, 4).val_row(0));  // another seed, another split
}

TEST(TrainValSplit, NoSplitIsFileOrderAndBadFractionsAreRefused) {
  const TrainValSplit none(50, 0.0, 1);
  EXPECT_EQ(none.val_rows(), 0);
  for (std::int64_t t = 0; t < 50; ++t) EXPECT_EQ(none.train_row(t), t);
  EXPECT_FALSE(none.is_val(3));
  EXPECT_THROW(TrainValSplit(50, -0.1, 1), core::UsageError);
  EXPECT_THROW(TrainValSplit(50, 1.0, 1), core::UsageError);
  EXPECT_THROW(TrainValSplit(50, 0.005, 1), core::UsageError);  // rounds to no row
  EXPECT_THROW(TrainValSplit(50, 0.999, 1), core::UsageError);  // rounds to every row
}

TEST(EpochSamplerWithSplit, TrainingStepsNeverReadValidationRows) {
  const TrainValSplit split(300, 0.2, 8);
  const EpochSampler s(split.train_rows(), 32, 8, true);
  std::vector<std::int64_t> rows(32);
  for (std::int64_t step = 0; step < 3 * s.steps_per_epoch(); ++step) {
    s.rows(step, 0, 32, rows.data());
    for (auto t : rows) ASSERT_FALSE(split.is_val(split.train_row(t)));
  }
}

}  // namespace
}  // namespace microddp::data
