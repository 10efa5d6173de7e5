// npy_import.hpp — NumPy arrays as one of our HDF5 data sets (`make-dataset --from-npy X.npy Y.npy
// OUT.h5`, `make-dataset --from-npz FILE.npz [--x-key K --y-key K] OUT.h5`; docs/data_sets.md).
//
// Inputs X: shape (N, ...) of float32, float64, uint8 or another integer type; row i is X[i]
// flattened in C order (its shape is recorded in the attribute input_shape, "28x28"), so in_dim is
// the product of the other dimensions (a 1-D X is one feature per row). Converted to float32:
//   float32   as it is; float64 rounded to nearest (a finite value beyond float32's range: exit 2)
//   uint8     p / 255.0f (pixels, as the IDX import scales them: the same bits)
//   other integers  the value itself, when |v| <= 2^24 (exact in float32; larger: exit 2)
// NaN or Inf anywhere: exit 2 naming the row and column. Bool inputs are refused.
// Labels Y: shape (N,) or (N, 1) of any integer type, each in [0, classes) (classes: --classes, or
// max label + 1); a float or bool Y, a negative label, a count that differs from X's: exit 2.
// Every label is checked before anything is written; the inputs are checked as they stream through
// (blocks of rows); the file is OUT.tmp until complete (io/dataset_writer.hpp): a failed import
// leaves no OUT. The .npy format and the .npz archive are read by io/npy_file.hpp and
// io/zip_archive.hpp, which check every header field and size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace microddp::io {

struct NpyImportOptions {
  std::string x_path, y_path;  // --from-npy X.npy Y.npy
  std::string npz_path;        // --from-npz FILE.npz (instead of the two files)
  std::string x_key = "x", y_key = "y";  // its members KEY.npy (np.savez(f, x=..., y=...))
  std::string output;
  std::int64_t classes = 0;  // 0: max label + 1
};

struct NpyImportResult {
  std::int64_t rows = 0, in_dim = 0, classes = 0;
  std::string x_source, y_source;   // "X.npy" or "FILE.npz:x.npy"
  std::string x_dtype, y_dtype;     // "float64", "int64", ...
  std::string row_shape;            // "28x28"
  std::string scaling;              // how X became float32
  std::vector<std::int64_t> label_counts;
  double seconds = 0.0;
};

// One process does it all (call it on one rank).
NpyImportResult import_npy(const NpyImportOptions& opts);

}  // namespace microddp::io
