// split_source.hpp — one side of a validation split (data/train_val_split.hpp) seen as a data
// source of its own: index i of the training side is the file's row split.train_row(i), of the
// validation side split.val_row(i).
//
// Contract: a view; the file source and the split must outlive it. rows() is the side's size and
// fill()/fill_rows() map indices to file rows and read them through the file's fill_rows(), so the
// trainer's epoch order and the evaluator address the side as they would a file. describe() names
// the file and the split (fraction, seed), so a checkpoint records it and a resume with another
// --val-fraction is refused (io/checkpoint_load.hpp compares the description).
// fill() and fill_rows() map through a scratch vector that grows to the largest request once
// (const: the mapping is the view's observable content; the scratch is not).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/data_source.hpp"
#include "data/train_val_split.hpp"

namespace microddp::data {

class SplitSource final : public DataSource {
 public:
  enum class Side { Train, Val };
  SplitSource(const DataSource& file, const TrainValSplit& split, Side side, std::uint64_t seed);

  std::int64_t in_dim() const override { return file_.in_dim(); }
  std::int64_t classes() const override { return file_.classes(); }
  std::int64_t rows() const override { return side_ == Side::Train ? split_.train_rows() : split_.val_rows(); }
  std::string describe() const override;
  // Indices [first, first + count), each taken mod rows() (as a file's samples wrap).
  void fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const override;
  void fill_rows(const std::int64_t* rows, std::int64_t count, float* x, std::int32_t* y) const override;
  // As the file's: the scratch is this side's own, and the file's resident rows are only read.
  bool prepare_fill_off_thread() const override { return file_.prepare_fill_off_thread(); }
  void check_unchanged() const override { file_.check_unchanged(); }

  // The file row of index i of this side.
  std::int64_t file_row(std::int64_t i) const { return side_ == Side::Train ? split_.train_row(i) : split_.val_row(i); }

 private:
  const DataSource& file_;
  const TrainValSplit& split_;
  Side side_;
  std::uint64_t seed_;
  mutable std::vector<std::int64_t> file_rows_;
};

}  // namespace microddp::data
