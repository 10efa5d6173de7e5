// split_source.cpp — index -> file row through a TrainValSplit, then the file's fill_rows().
#include "data/split_source.hpp"

#include <sstream>

#include "core/error.hpp"

namespace microddp::data {

SplitSource::SplitSource(const DataSource& file, const TrainValSplit& split, Side side, std::uint64_t seed)
    : file_(file), split_(split), side_(side), seed_(seed) {
  MDDP_CHECK(split.rows() == file.rows(), "a split of " << split.rows() << " rows over a source of " << file.rows());
}

std::string SplitSource::describe() const {
  std::ostringstream os;
  os << file_.describe() << (side_ == Side::Train ? ":train" : ":val") << "(val_fraction=" << split_.val_fraction()
     << ",seed=" << seed_ << ")";
  return os.str();
}

void SplitSource::fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const {
  MDDP_CHECK(first >= 0 && count >= 0, "bad index range [" << first << ", " << first + count << ")");
  if (file_rows_.size() < static_cast<std::size_t>(count)) file_rows_.resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) file_rows_[static_cast<std::size_t>(i)] = file_row((first + i) % rows());
  file_.fill_rows(file_rows_.data(), count, x, y);
}

void SplitSource::fill_rows(const std::int64_t* rows, std::int64_t count, float* x, std::int32_t* y) const {
  if (file_rows_.size() < static_cast<std::size_t>(count)) file_rows_.resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    MDDP_CHECK(rows[i] >= 0 && rows[i] < this->rows(), "index " << rows[i] << " outside " << this->rows() << " rows");
    file_rows_[static_cast<std::size_t>(i)] = file_row(rows[i]);
  }
  file_.fill_rows(file_rows_.data(), count, x, y);
}

}  // namespace microddp::data
