// dataset_split.cpp — both sides of the split, read through the file's fill_rows in blocks.
#include "io/dataset_split.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/error.hpp"
#include "core/timer.hpp"
#include "data/train_val_split.hpp"
#include "io/dataset_writer.hpp"
#include "io/hdf5_data_source.hpp"

namespace microddp::io {

namespace {
constexpr std::int64_t kSplitBlockElements = std::int64_t{1} << 22;  // floats per block (16 MiB)

void write_side(const Hdf5DataSource& in, const data::TrainValSplit& split, bool val, const SplitOptions& o) {
  const std::int64_t n = val ? split.val_rows() : split.train_rows();
  const std::string& path = val ? o.val_output : o.train_output;
  DatasetWriter out(path, n, in.in_dim(), in.classes(), "microddp make-dataset --split (io/dataset_split.hpp)");
  out.attribute("source", o.input);
  out.attribute("split", std::string(val ? "val" : "train"));
  out.attribute("val_fraction", o.val_fraction);
  out.attribute("seed", static_cast<std::int64_t>(o.seed));
  const std::int64_t block = std::max<std::int64_t>(1, std::min(n, kSplitBlockElements / in.in_dim()));
  std::vector<std::int64_t> rows(static_cast<std::size_t>(block));
  std::vector<float> x(static_cast<std::size_t>(block * in.in_dim()));
  std::vector<std::int32_t> y(static_cast<std::size_t>(block));
  for (std::int64_t r0 = 0; r0 < n; r0 += block) {
    const std::int64_t count = std::min(block, n - r0);
    for (std::int64_t i = 0; i < count; ++i) {
      rows[static_cast<std::size_t>(i)] = val ? split.val_row(r0 + i) : split.train_row(r0 + i);
    }
    in.fill_rows(rows.data(), count, x.data(), y.data());  // validates every row
    out.write_rows(r0, count, x.data(), y.data());
  }
  out.publish();
}
}  // namespace

SplitResult write_split(const SplitOptions& o) {
  core::Stopwatch sw;
  MDDP_USAGE_CHECK(o.train_output != o.input && o.val_output != o.input && o.train_output != o.val_output,
                   "make-dataset --split: IN, TRAIN and VAL must be three different files");
  const Hdf5DataSource in(o.input);
  const data::TrainValSplit split(in.rows(), o.val_fraction, o.seed);  // a bad fraction: UsageError
  write_side(in, split, /*val=*/false, o);
  try {
    write_side(in, split, /*val=*/true, o);
  } catch (...) {
    std::remove(o.train_output.c_str());  // both or neither
    throw;
  }
  SplitResult r;
  r.rows = in.rows();
  r.train_rows = split.train_rows();
  r.val_rows = split.val_rows();
  r.in_dim = in.in_dim();
  r.classes = in.classes();
  r.seconds = sw.elapsed_s();
  return r;
}

}  // namespace microddp::io
