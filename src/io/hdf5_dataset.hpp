// hdf5_dataset.hpp — training data in HDF5: writing the synthetic set, reading rank slices.
//
// File layout (format "microddp-dataset", version 1):
//   /inputs   float32 (N, in_dim), row-major: sample i is row i
//   /labels   int32   (N,), each in [0, classes)
//   /         attributes: format, format_version, samples, in_dim, classes, seed, generator
// Hdf5DataSource is a data::DataSource: sample index i maps to row i mod N (epochs wrap), and
// each fill() reads ONLY the requested rows with hyperslab selections (one or two contiguous
// slices), so no rank ever reads the whole file. Every row read is validated (finite features,
// label in range) before it reaches the model; errors name the file, dataset, row and value.
// HDF5 allocates small dataspace objects per read: the one exception to "the step allocates
// nothing", accepted because the read itself is a system call.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/data_source.hpp"
#include "io/hdf5_check.hpp"

namespace microddp::io {

inline constexpr const char* kDatasetFormat = "microddp-dataset";
inline constexpr std::int64_t kDatasetFormatVersion = 1;

struct MakeDatasetOptions {
  std::string path;
  std::int64_t samples = 0;
  std::int64_t in_dim = 0;
  std::int64_t classes = 0;
  std::uint64_t seed = 1;
};

// Collective over `comm`: rank r generates rows [N r/n, N (r+1)/n) of the synthetic set (samples
// 0..N-1, identical to data::SyntheticDataset) and writes them with collective hyperslab writes,
// in blocks of at most 64 Ki rows, into PATH.tmp, then rank 0 publishes it (fsync + rename +
// directory fsync) as checkpoints are. Returns the seconds taken.
double write_synthetic_dataset(MPI_Comm comm, const MakeDatasetOptions& opts);

class Hdf5DataSource final : public data::DataSource {
 public:
  // Opens PATH read-only and validates its metadata (format, shapes, dtypes); throws
  // core::UsageError naming the file, the dataset, what was expected and what was found.
  explicit Hdf5DataSource(const std::string& path);

  std::int64_t in_dim() const override { return in_dim_; }
  std::int64_t classes() const override { return classes_; }
  std::int64_t rows() const override { return rows_; }
  std::string describe() const override;
  void fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const override;

  const std::string& path() const { return path_; }
  std::int64_t rows_read() const { return rows_read_; }  // total rows this object has read

 private:
  void read_rows(std::int64_t row, std::int64_t count, float* x, std::int32_t* y) const;

  std::string path_;
  Hid file_, inputs_, labels_;
  std::int64_t rows_ = 0, in_dim_ = 0, classes_ = 0;
  mutable std::int64_t rows_read_ = 0;
};

// inspect: metadata plus a full scan (in blocks) for NaN/Inf and label range.
struct DatasetReport {
  std::int64_t samples = 0, in_dim = 0, classes = 0;
  std::uint64_t seed = 0;
  std::vector<std::int64_t> label_counts;
};
DatasetReport scan_dataset(const std::string& path);

}  // namespace microddp::io
