// epoch_sampler.cpp — step -> (epoch, positions) -> training rows; see the header for the rules.
#include "data/epoch_sampler.hpp"

#include "core/error.hpp"

namespace microddp::data {

EpochSampler::EpochSampler(std::int64_t train_rows, std::int64_t global_batch, std::uint64_t seed, bool shuffle)
    : rows_(train_rows), batch_(global_batch), seed_(seed), shuffle_(shuffle) {
  MDDP_USAGE_CHECK(train_rows >= 1, "the training set is empty");
  MDDP_USAGE_CHECK(global_batch >= 1, "the global batch must hold at least one row, got " << global_batch);
  MDDP_USAGE_CHECK(global_batch <= train_rows,
                   "the global batch of " << global_batch << " rows is larger than the training set of " << train_rows
                                          << " rows: an epoch would hold no full batch (the partial last batch of "
                                             "every epoch is dropped); use a global batch of at most "
                                          << train_rows << " rows");
}

RowPermutation EpochSampler::order(std::int64_t epoch) const {
  MDDP_CHECK(epoch >= 0 && epoch < (std::int64_t{1} << 48), "epoch " << epoch << " out of range");
  return RowPermutation(seed_, kEpochStream + static_cast<std::uint64_t>(epoch), rows_);
}

std::int64_t EpochSampler::at(std::int64_t epoch, std::int64_t position) const {
  MDDP_CHECK(position >= 0 && position < rows_, "position " << position << " outside an epoch of " << rows_);
  return shuffle_ ? order(epoch)(position) : position;
}

std::int64_t EpochSampler::row(std::int64_t step, std::int64_t i) const {
  std::int64_t out = 0;
  rows(step, i, 1, &out);
  return out;
}

void EpochSampler::rows(std::int64_t step, std::int64_t first, std::int64_t count, std::int64_t* out) const {
  MDDP_CHECK(step >= 0 && first >= 0 && count >= 0 && first + count <= batch_,
             "rows [" << first << ", " << first + count << ") of step " << step << " outside a batch of " << batch_);
  const std::int64_t base = step_in_epoch(step) * batch_ + first;
  if (!shuffle_) {
    for (std::int64_t i = 0; i < count; ++i) out[i] = base + i;
    return;
  }
  const RowPermutation perm = order(epoch_of(step));
  for (std::int64_t i = 0; i < count; ++i) out[i] = perm(base + i);
}

}  // namespace microddp::data
