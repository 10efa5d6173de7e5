// dataset_writer.hpp — one of our HDF5 data sets (io/hdf5_dataset.hpp's format, version 1: /inputs
// float32 (N, in_dim), /labels int32 (N,), the root attributes) written by one process, block by
// block, for the imports and the split of `make-dataset` (io/npy_import.hpp, io/dataset_split.hpp).
//
// Contract: nothing reaches OUT until publish(): the file is OUT.tmp until then, and published as
// every file we write for the user is (io/output_file.hpp: never onto a checkpoint, an existing
// directory or an unwritable one). A writer destroyed without publish() (an import that failed
// half-way) removes OUT.tmp, so a failure leaves neither OUT nor OUT.tmp. The command checks that
// OUT is none of its inputs before it starts.
#pragma once

#include <cstdint>
#include <string>

#include "io/hdf5_check.hpp"
#include "io/output_file.hpp"

namespace microddp::io {

class DatasetWriter {
 public:
  // Creates OUT.tmp with the datasets and the attributes format, format_version, samples, in_dim,
  // classes, generator. Throws core::UsageError when it cannot be created.
  DatasetWriter(const std::string& path, std::int64_t rows, std::int64_t in_dim, std::int64_t classes,
                const std::string& generator);
  ~DatasetWriter();
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;

  void attribute(const char* name, const std::string& value);
  void attribute(const char* name, std::int64_t value);
  void attribute(const char* name, double value);
  // Rows [first, first + count) of /inputs, row-major; labels of the same rows.
  void write_rows(std::int64_t first, std::int64_t count, const float* x, const std::int32_t* y);
  // Flush, close, publish OUT.
  void publish();

 private:
  OutputFile out_;  // declared first: destroyed last, after the handles that write into it
  std::int64_t in_dim_;
  Hid file_, inputs_, labels_;
};

}  // namespace microddp::io
