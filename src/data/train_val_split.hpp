// train_val_split.hpp — a seeded held-out validation split of a file's rows, as pure functions.
//
// Contract (docs/data_sets.md, "Validation split"):
//   * The N rows of a file are split into V = round(fraction x N) validation rows and N - V
//     training rows by one permutation P = RowPermutation(seed, kSplitStream, N): validation row j
//     is P(j) (j < V), training row t is P(V + t) (t < N - V). The two sets are disjoint and cover
//     every row (P is a bijection), and depend only on (seed, N, fraction): the same at any world
//     size, any epoch, on every rank, without a table.
//   * is_val(row) answers membership in O(1) (P's inverse).
//   * fraction 0 means no split: training row t is row t (file order), no validation rows.
//   * A fraction outside [0, 1), or one that leaves the validation or the training set empty, is a
//     core::UsageError naming the fraction and N.
// Training index t is what data::EpochSampler orders into epochs; the rows of a training index range
// are therefore not in file order (the split already mixes them), which costs nothing once the
// shuffled epochs read them in random order anyway. Evaluation counts do not depend on row order.
#pragma once

#include <cstdint>

#include "data/row_permutation.hpp"

namespace microddp::data {

// The split's RNG stream (next to data/epoch_sampler.hpp's epoch streams, far from parameters').
inline constexpr std::uint64_t kSplitStream = 0x5B17ull << 48;

class TrainValSplit {
 public:
  TrainValSplit(std::int64_t rows, double val_fraction, std::uint64_t seed);

  std::int64_t rows() const { return perm_.size(); }
  std::int64_t val_rows() const { return val_; }
  std::int64_t train_rows() const { return perm_.size() - val_; }
  double val_fraction() const { return fraction_; }

  // File row of training index t (0 <= t < train_rows()).
  std::int64_t train_row(std::int64_t t) const { return val_ == 0 ? t : perm_(val_ + t); }
  // File row of validation index j (0 <= j < val_rows()).
  std::int64_t val_row(std::int64_t j) const { return perm_(j); }
  bool is_val(std::int64_t row) const { return val_ > 0 && perm_.inverse(row) < val_; }

 private:
  RowPermutation perm_;
  std::int64_t val_ = 0;
  double fraction_ = 0.0;
};

}  // namespace microddp::data
