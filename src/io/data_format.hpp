// data_format.hpp — the formats of the data files the commands read rows from (`train --data` and
// `--val-data`, `evaluate --data`, `inspect`), in one table. A row says how to recognise a file of
// its format, how to open it as a data::DataSource (with the one-line description a run's header
// prints), and how to check it whole (`inspect`: every row finite, every label in range). Callers
// ask the table, never a reader's type: adding a format is its reader's file plus one row here.
//
// The imports of `make-dataset` (NumPy .npy/.npz, IDX: io/npy_import.hpp, io/idx_import.hpp) are
// not rows: they convert a file into an HDF5 data set once, with options of their own, and the
// run reads the HDF5 file.
//
// A file no row recognises is given to the first row (HDF5), whose reader says what is wrong with it
// (as every --data file was before there was a table).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_source.hpp"
#include "io/hdf5_data_source.hpp"

namespace microddp::io {

// A data file, opened.
struct OpenedData {
  std::unique_ptr<data::DataSource> source;
  // For a run's header: "FILE: 500 rows x 12 features (float64, converted to float32 on read), ...".
  std::string summary;
};

struct DataFormatRow {
  std::string_view name;  // "hdf5"
  std::string_view what;  // for messages: "HDF5 data set (microddp make-dataset, h5py)"
  // From the file's content (its magic bytes), not its name.
  bool (*recognise)(const std::string& path);
  // classes_if_absent: the classes when the file does not say (0: infer them from the labels);
  // resident_limit_bytes: rows up to this size (float32 features, int32 labels) may be read once and
  // kept in memory, larger files are read as the rows are needed (a reader that always streams
  // ignores it). Throws core::UsageError naming the file and what is wrong.
  OpenedData (*open)(const std::string& path, std::int64_t classes_if_absent, const DataKeys& keys,
                     std::int64_t resident_limit_bytes);
  // The whole file read once (inspect); throws core::UsageError on the first bad row.
  DatasetReport (*check)(const std::string& path);
};

const std::vector<DataFormatRow>& data_formats();
// The row whose recognise() says yes, else the first row.
const DataFormatRow& data_format_of(const std::string& path);
// data_format_of(path).open(...)
OpenedData open_data_file(const std::string& path, std::int64_t classes_if_absent, const DataKeys& keys = {},
                          std::int64_t resident_limit_bytes = Hdf5DataSource::kResidentLimitBytes);

}  // namespace microddp::io
