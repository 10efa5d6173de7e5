// data_format.cpp — the table of data file formats: one row per reader.
#include "io/data_format.hpp"

#include <hdf5.h>

#include "io/hdf5_check.hpp"

namespace microddp::io {

namespace {

bool is_hdf5(const std::string& path) {
  hdf5_quiet();
  return H5Fis_hdf5(path.c_str()) > 0;
}

OpenedData open_hdf5(const std::string& path, std::int64_t classes_if_absent, const DataKeys& keys,
                     std::int64_t resident_limit_bytes) {
  auto source = std::make_unique<Hdf5DataSource>(path, classes_if_absent, keys);
  source->set_resident_limit_bytes(resident_limit_bytes);
  std::string summary = source->summary();
  return {std::move(source), std::move(summary)};
}

}  // namespace

const std::vector<DataFormatRow>& data_formats() {
  static const std::vector<DataFormatRow> rows = {
      {.name = "hdf5",
       .what = "HDF5 data set (microddp make-dataset, h5py)",
       .recognise = is_hdf5,
       .open = open_hdf5,
       .check = scan_dataset},
  };
  return rows;
}

const DataFormatRow& data_format_of(const std::string& path) {
  for (const DataFormatRow& row : data_formats()) {
    if (row.recognise(path)) return row;
  }
  return data_formats().front();
}

OpenedData open_data_file(const std::string& path, std::int64_t classes_if_absent, const DataKeys& keys,
                          std::int64_t resident_limit_bytes) {
  return data_format_of(path).open(path, classes_if_absent, keys, resident_limit_bytes);
}

}  // namespace microddp::io
