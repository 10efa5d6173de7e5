// hdf5_dataset.hpp — our HDF5 data-set format and its writer (`make-dataset`). The reader, which
// also takes files written with h5py, is io/hdf5_data_source.hpp.
//
// File layout (format "microddp-dataset", version 1):
//   /inputs   float32 (N, in_dim), row-major: sample i is row i
//   /labels   int32   (N,), each in [0, classes)
//   /         attributes: format, format_version, samples, in_dim, classes, seed, teacher_seed, generator
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>

namespace microddp::io {

inline constexpr const char* kDatasetFormat = "microddp-dataset";
inline constexpr std::int64_t kDatasetFormatVersion = 1;

struct MakeDatasetOptions {
  std::string path;
  std::int64_t samples = 0;
  std::int64_t in_dim = 0;
  std::int64_t classes = 0;
  std::uint64_t seed = 1;
  // The teacher's seed (make-dataset --teacher-seed): with another `seed`, new rows labelled by the
  // same teacher as the set of teacher_seed (held-out rows for train --val-data). Unset: `seed`.
  std::optional<std::uint64_t> teacher_seed;
};

// Collective over `comm`: rank r generates rows [N r/n, N (r+1)/n) of the synthetic set (samples
// 0..N-1, identical to data::SyntheticDataset) and writes them with collective hyperslab writes,
// in blocks of at most 64 Ki rows and 64 MiB, into PATH.tmp, then rank 0 publishes it (fsync + rename +
// directory fsync) as checkpoints are. Returns the seconds taken.
double write_synthetic_dataset(MPI_Comm comm, const MakeDatasetOptions& opts);

}  // namespace microddp::io
