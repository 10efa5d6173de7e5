// data_source.hpp — where the trainer gets sample rows from.
//
// Contract: fill(first, count, x, y) writes the global samples [first, first + count) — x as
// (count, in_dim) float32 row-major, y as count int32 labels in [0, classes) — and is a pure function
// of the sample index (docs/design.md: data is a pure function of (seed, global sample index)), so
// any world size sees the same global batches and a resumed run continues where it stopped.
// A finite source (an HDF5 file of N rows) maps sample i to row i mod N (epochs wrap).
// Implementations: data::SyntheticDataset (here), io::Hdf5DataSource (src/io).
#pragma once

#include <cstdint>
#include <string>

namespace microddp::data {

class DataSource {
 public:
  virtual ~DataSource() = default;
  virtual std::int64_t in_dim() const = 0;
  virtual std::int64_t classes() const = 0;
  // Rows in one epoch; 0 for an unbounded generator.
  virtual std::int64_t rows() const = 0;
  // What it is, recorded in checkpoints and checked on resume ("synthetic", "hdf5:FILE").
  virtual std::string describe() const = 0;
  // const: a source's observable content never changes (file readers keep handles as mutable state).
  virtual void fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const = 0;
};

}  // namespace microddp::data
