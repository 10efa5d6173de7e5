// epoch_sampler.hpp — which training rows global step s reads, in shuffled epochs, as pure functions.
//
// Contract (docs/data_sets.md, "Epochs"):
//   * Epoch e's order of the N training rows is a permutation that is a pure function of
//     (seed, epoch): RowPermutation(seed, kEpochStream + e, N) with shuffling on, file order with it
//     off. Position p of epoch e holds training row order_e(p).
//   * Global step s takes the next B = global_batch positions: with S = floor(N / B) steps per
//     epoch, step s is step s mod S of epoch s / S and reads positions [(s mod S) B, (s mod S + 1) B).
//   * The epoch's end: the last N mod B positions of every epoch are DROPPED (PyTorch's
//     drop_last), never carried into the next epoch and never padded. Every step therefore holds
//     exactly B distinct rows (the loss stays normalised by the same global batch, and no row
//     appears twice in one batch), an epoch is a whole number of steps (evaluation, checkpoints and
//     --epochs fall on step boundaries), and since the order changes every epoch, the rows left out
//     change too: a row is missed by a given epoch with probability (N mod B) / N.
//   * B > N is refused (core::UsageError): an epoch would hold no full batch.
//   * The rows of step s are split over ranks exactly as data::Sampler splits a global batch
//     (rank r takes positions [local_offset, local_offset + local_count) of the step's B), so the
//     same global batch is seen at any world size. With gradient accumulation pass B = K x the
//     micro-batch: micro-step k then reads the k-th slice of the step's rows.
// Unlike PyTorch's DistributedSampler, nothing depends on the world size: its per-rank strided
// split pads the epoch with repeated rows (drop_last=False) or trims it to a multiple of the world
// size, so the global batches change with the number of ranks; here they cannot.
//
// "Training row" t is an index into the training set: the file's row t, or, with a validation
// split, data::TrainValSplit::train_row(t).
#pragma once

#include <cstdint>

#include "data/row_permutation.hpp"

namespace microddp::data {

// RNG streams of the epoch orders: kEpochStream + e for epoch e (e < 2^48); parameters use streams
// below 2^32 (model/mlp.cpp), the synthetic set two others (data/synthetic_dataset.cpp).
inline constexpr std::uint64_t kEpochStream = 0xE90Cull << 48;

class EpochSampler {
 public:
  // train_rows N >= 1, 1 <= global_batch B <= N (core::UsageError naming both otherwise).
  EpochSampler(std::int64_t train_rows, std::int64_t global_batch, std::uint64_t seed, bool shuffle);

  std::int64_t train_rows() const { return rows_; }
  std::int64_t global_batch() const { return batch_; }
  bool shuffle() const { return shuffle_; }
  std::int64_t steps_per_epoch() const { return rows_ / batch_; }
  // Positions of every epoch that no step reads (drop_last): N mod B.
  std::int64_t dropped_per_epoch() const { return rows_ % batch_; }
  std::int64_t epoch_of(std::int64_t step) const { return step / steps_per_epoch(); }
  std::int64_t step_in_epoch(std::int64_t step) const { return step % steps_per_epoch(); }

  // The shuffled order of epoch e (what at() follows when shuffling is on).
  RowPermutation order(std::int64_t epoch) const;
  // Training row at position p of epoch e (0 <= p < N).
  std::int64_t at(std::int64_t epoch, std::int64_t position) const;
  // Training row of row i (0 <= i < B) of global step s.
  std::int64_t row(std::int64_t step, std::int64_t i) const;
  // Training rows of rows [first, first + count) of global step s into out[0 .. count): e.g. a
  // rank's share (first = data::Sampler::local_offset(), count = local_count()).
  void rows(std::int64_t step, std::int64_t first, std::int64_t count, std::int64_t* out) const;

 private:
  std::int64_t rows_, batch_;
  std::uint64_t seed_;
  bool shuffle_;
};

}  // namespace microddp::data
