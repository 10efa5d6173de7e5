// train_val_split.cpp — the number of validation rows and the checks; the rows are the header's.
#include "data/train_val_split.hpp"

#include <cmath>

#include "core/error.hpp"

namespace microddp::data {

namespace {
std::int64_t validation_count(std::int64_t rows, double fraction) {
  MDDP_USAGE_CHECK(rows >= 1, "cannot split an empty data set");
  MDDP_USAGE_CHECK(fraction >= 0.0 && fraction < 1.0, "the validation fraction must be in [0, 1), got " << fraction);
  // Rounded to nearest (half up); exact for every N below 2^53.
  const auto v = static_cast<std::int64_t>(std::floor(fraction * static_cast<double>(rows) + 0.5));
  MDDP_USAGE_CHECK(fraction == 0.0 || v >= 1,
                   "a validation fraction of " << fraction << " of " << rows << " rows holds no row (it rounds to 0)");
  MDDP_USAGE_CHECK(v < rows,
                   "a validation fraction of " << fraction << " of " << rows << " rows leaves no training row");
  return v;
}
}  // namespace

TrainValSplit::TrainValSplit(std::int64_t rows, double val_fraction, std::uint64_t seed)
    : perm_(seed, kSplitStream, rows), val_(validation_count(rows, val_fraction)), fraction_(val_fraction) {}

}  // namespace microddp::data
