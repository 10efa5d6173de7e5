// dataset_writer.cpp — hyperslab writes into OUT.tmp, then publish.
#include "io/dataset_writer.hpp"

#include "io/h5_util.hpp"
#include "io/hdf5_dataset.hpp"

namespace microddp::io {

DatasetWriter::DatasetWriter(const std::string& path, std::int64_t rows, std::int64_t in_dim, std::int64_t classes,
                             const std::string& generator)
    : out_(path, {"make-dataset's output", {}}), in_dim_(in_dim) {
  hdf5_quiet();
  file_ = Hid(MDDP_HDF5_FILE_CHECK(H5Fcreate(out_.temp().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                                   out_.temp(), "cannot create file"));
  write_attr(file_, "format", std::string(kDatasetFormat));
  write_attr(file_, "format_version", kDatasetFormatVersion);
  write_attr(file_, "samples", rows);
  write_attr(file_, "in_dim", in_dim);
  write_attr(file_, "classes", classes);
  write_attr(file_, "generator", generator);
  const hsize_t xd[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(in_dim)};
  const hsize_t yd[1] = {static_cast<hsize_t>(rows)};
  Hid xs(MDDP_HDF5_CHECK(H5Screate_simple(2, xd, nullptr)));
  Hid ys(MDDP_HDF5_CHECK(H5Screate_simple(1, yd, nullptr)));
  inputs_ = Hid(MDDP_HDF5_CHECK(H5Dcreate2(file_, "/inputs", H5T_IEEE_F32LE, xs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  labels_ = Hid(MDDP_HDF5_CHECK(H5Dcreate2(file_, "/labels", H5T_STD_I32LE, ys, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
}

DatasetWriter::~DatasetWriter() {
  // The handles close before out_ removes an unpublished temporary.
  inputs_.reset();
  labels_.reset();
  file_.reset();
}

void DatasetWriter::attribute(const char* name, const std::string& value) { write_attr(file_, name, value); }
void DatasetWriter::attribute(const char* name, std::int64_t value) { write_attr(file_, name, value); }
void DatasetWriter::attribute(const char* name, double value) { write_attr(file_, name, value); }

void DatasetWriter::write_rows(std::int64_t first, std::int64_t count, const float* x, const std::int32_t* y) {
  if (count == 0) return;
  for (int k = 0; k < 2; ++k) {
    const hid_t dset = k == 0 ? static_cast<hid_t>(inputs_) : static_cast<hid_t>(labels_);
    const std::int64_t cols = k == 0 ? in_dim_ : 1;
    Hid fs(MDDP_HDF5_CHECK(H5Dget_space(dset)));
    const hsize_t start[2] = {static_cast<hsize_t>(first), 0};
    const hsize_t cnt[2] = {static_cast<hsize_t>(count), static_cast<hsize_t>(cols)};
    MDDP_HDF5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, cnt, nullptr));
    const hsize_t m[1] = {static_cast<hsize_t>(count * cols)};
    Hid ms(MDDP_HDF5_CHECK(H5Screate_simple(1, m, nullptr)));
    if (k == 0) {
      MDDP_HDF5_CHECK(H5Dwrite(dset, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, x));
    } else {
      MDDP_HDF5_CHECK(H5Dwrite(dset, H5T_NATIVE_INT32, ms, fs, H5P_DEFAULT, y));
    }
  }
}

void DatasetWriter::publish() {
  MDDP_HDF5_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL));
  inputs_.reset();
  labels_.reset();
  file_.reset();
  out_.publish();
}

}  // namespace microddp::io
