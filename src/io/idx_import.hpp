// idx_import.hpp — an IDX image/label pair (MNIST, Fashion-MNIST) as one of our HDF5 data sets
// (`make-dataset --from-idx IMAGES LABELS OUT.h5`).
//
// What it writes (io/hdf5_dataset.hpp's format, version 1; docs/data_sets.md):
//   /inputs  float32 (N, rows x columns): image i flattened row-major, each pixel p as p / 255.0f
//            (IEEE float32 division, correctly rounded: numpy's x.astype(np.float32) / np.float32(255)
//            gives the same bits), so every value is in [0, 1]
//   /labels  int32 (N,), each in [0, classes)
//   /        format, format_version, samples, in_dim, classes, generator, scaling, source_images,
//            source_labels, image_shape ("28x28")
// Scaling is /255 only, no standardisation: a row then depends on nothing but its own pixels, so
// a test set imported on its own is scaled exactly like the training set (no statistics to carry
// from one file to the other), the exported model's input contract is one sentence, and Adam
// trains an MLP on [0, 1] inputs as well as on standardised ones (PyTorch's ToTensor() convention).
//
// Checks, each a core::UsageError naming the file (exit 2): not IDX or the wrong kind (images must
// be unsigned bytes with >= 2 dimensions, labels unsigned bytes with 1; a swapped pair is named as
// such), truncated or corrupt files, extra bytes, a different count of images and labels, a label
// >= classes (naming the item and the value). Every label is checked before anything is written;
// the file is written to OUT.tmp and published atomically (io/atomic_file.hpp) only when both
// files were read to their end, so a failed import leaves no OUT.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace microddp::io {

struct IdxImportOptions {
  std::string images, labels, output;
  std::int64_t classes = 10;  // MNIST and Fashion-MNIST: labels 0..9
};

struct IdxImportResult {
  std::int64_t rows = 0, in_dim = 0, classes = 0;
  std::vector<std::int64_t> image_dims;    // (rows, columns) of one image (every dimension but the count)
  std::vector<std::int64_t> label_counts;  // rows per class
  bool images_gzip = false, labels_gzip = false;
  double seconds = 0.0;
};

// One process does it all (call it on one rank; the file is small next to the reading time).
IdxImportResult import_idx(const IdxImportOptions& opts);

}  // namespace microddp::io
