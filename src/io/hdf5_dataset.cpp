// hdf5_dataset.cpp — synthetic-set writer (collective) and the hyperslab-reading data source.
#include "io/hdf5_dataset.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "comm/mpi_check.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "data/synthetic_dataset.hpp"
#include "io/atomic_file.hpp"
#include "io/h5_util.hpp"

namespace microddp::io {

namespace {
constexpr std::int64_t kBlockRows = 65536;  // rows per write/scan block: bounds memory (64 Ki x d floats)
}  // namespace

double write_synthetic_dataset(MPI_Comm comm, const MakeDatasetOptions& o) {
  hdf5_quiet();
  core::Stopwatch sw;
  int rank = 0, size = 1;
  MDDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MDDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  const data::SyntheticDataset gen(o.seed, o.in_dim, o.classes);
  const std::string tmp = temp_path(o.path);
  {
    Hid fapl(MDDP_HDF5_CHECK(H5Pcreate(H5P_FILE_ACCESS)));
    MDDP_HDF5_CHECK(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL));
    Hid file(MDDP_HDF5_FILE_CHECK(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), tmp, "cannot create file"));
    write_attr(file, "format", std::string(kDatasetFormat));
    write_attr(file, "format_version", kDatasetFormatVersion);
    write_attr(file, "samples", o.samples);
    write_attr(file, "in_dim", o.in_dim);
    write_attr(file, "classes", o.classes);
    write_attr_u64(file, "seed", o.seed);
    write_attr(file, "generator", std::string("microddp synthetic teacher set (data/synthetic_dataset.hpp), samples 0..N-1"));
    const hsize_t xd[2] = {static_cast<hsize_t>(o.samples), static_cast<hsize_t>(o.in_dim)};
    const hsize_t yd[1] = {static_cast<hsize_t>(o.samples)};
    Hid xs(MDDP_HDF5_CHECK(H5Screate_simple(2, xd, nullptr)));
    Hid ys(MDDP_HDF5_CHECK(H5Screate_simple(1, yd, nullptr)));
    Hid xds(MDDP_HDF5_CHECK(H5Dcreate2(file, "/inputs", H5T_IEEE_F32LE, xs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    Hid yds(MDDP_HDF5_CHECK(H5Dcreate2(file, "/labels", H5T_STD_I32LE, ys, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    Hid dxpl(MDDP_HDF5_CHECK(H5Pcreate(H5P_DATASET_XFER)));
    MDDP_HDF5_CHECK(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
    const std::int64_t lo = o.samples * rank / size, hi = o.samples * (rank + 1) / size;
    // Collective writes need the same number of calls on every rank: the largest share decides.
    const std::int64_t max_share = (o.samples + size - 1) / size + 1;
    const std::int64_t blocks = (max_share + kBlockRows - 1) / kBlockRows;
    std::vector<float> x(static_cast<std::size_t>(std::min(kBlockRows, std::max<std::int64_t>(hi - lo, 1)) * o.in_dim));
    std::vector<std::int32_t> y(x.size() / static_cast<std::size_t>(o.in_dim));
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t r0 = std::min(hi, lo + b * kBlockRows), r1 = std::min(hi, r0 + kBlockRows);
      const std::int64_t n = r1 - r0;
      if (n > 0) gen.fill(r0, n, x.data(), y.data());
      Hid fsx(MDDP_HDF5_CHECK(H5Dget_space(xds)));
      Hid fsy(MDDP_HDF5_CHECK(H5Dget_space(yds)));
      const hsize_t mx[1] = {static_cast<hsize_t>(std::max<std::int64_t>(n, 0) * o.in_dim)};
      const hsize_t my[1] = {static_cast<hsize_t>(std::max<std::int64_t>(n, 0))};
      Hid msx(MDDP_HDF5_CHECK(H5Screate_simple(1, mx, nullptr)));
      Hid msy(MDDP_HDF5_CHECK(H5Screate_simple(1, my, nullptr)));
      if (n > 0) {
        const hsize_t start[2] = {static_cast<hsize_t>(r0), 0}, cnt[2] = {static_cast<hsize_t>(n), static_cast<hsize_t>(o.in_dim)};
        MDDP_HDF5_CHECK(H5Sselect_hyperslab(fsx, H5S_SELECT_SET, start, nullptr, cnt, nullptr));
        MDDP_HDF5_CHECK(H5Sselect_hyperslab(fsy, H5S_SELECT_SET, start, nullptr, cnt, nullptr));
      } else {
        MDDP_HDF5_CHECK(H5Sselect_none(fsx));
        MDDP_HDF5_CHECK(H5Sselect_none(fsy));
        MDDP_HDF5_CHECK(H5Sselect_none(msx));
        MDDP_HDF5_CHECK(H5Sselect_none(msy));
      }
      MDDP_HDF5_CHECK(H5Dwrite(xds, H5T_NATIVE_FLOAT, msx, fsx, dxpl, x.data()));
      MDDP_HDF5_CHECK(H5Dwrite(yds, H5T_NATIVE_INT32, msy, fsy, dxpl, y.data()));
    }
    MDDP_HDF5_CHECK(H5Fflush(file, H5F_SCOPE_GLOBAL));
  }  // collective close
  int ok = 1;
  if (rank == 0) {
    try {
      publish(tmp, o.path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "microddp: error: %s\n", e.what());
      ok = 0;
    }
  }
  MDDP_MPI_CHECK(MPI_Bcast(&ok, 1, MPI_INT, 0, comm));
  MDDP_CHECK(ok == 1, "publishing dataset " << o.path << " failed (see rank 0's message)");
  return sw.elapsed_s();
}

Hdf5DataSource::Hdf5DataSource(const std::string& path) : path_(path) {
  hdf5_quiet();
  MDDP_USAGE_CHECK(::access(path.c_str(), R_OK) == 0, "dataset " << path << ": " << std::strerror(errno));
  MDDP_USAGE_CHECK(H5Fis_hdf5(path.c_str()) > 0, "dataset " << path << ": not an HDF5 file (truncated or wrong file?)");
  const std::string ctx = "dataset " + path;
  file_ = Hid(MDDP_HDF5_FILE_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), ctx, "cannot open"));
  const std::string fmt = read_attr_str(file_, "format", ctx + ": attribute 'format'");
  MDDP_USAGE_CHECK(fmt == kDatasetFormat, ctx << ": attribute 'format' is '" << fmt << "', expected '" << kDatasetFormat << "'");
  const std::int64_t ver = read_attr_i64(file_, "format_version", ctx + ": attribute 'format_version'");
  MDDP_USAGE_CHECK(ver == kDatasetFormatVersion, ctx << ": format_version is " << ver << ", this build reads " << kDatasetFormatVersion);
  classes_ = read_attr_i64(file_, "classes", ctx + ": attribute 'classes'");
  MDDP_USAGE_CHECK(classes_ >= 2 && classes_ <= (1 << 24), ctx << ": attribute 'classes' is " << classes_ << ", expected >= 2");
  for (const char* d : {"/inputs", "/labels"}) {
    MDDP_USAGE_CHECK(path_exists(file_, d), ctx << ": dataset " << d << " is missing");
  }
  inputs_ = Hid(MDDP_HDF5_FILE_CHECK(H5Dopen2(file_, "/inputs", H5P_DEFAULT), ctx + ": dataset /inputs", "cannot open"));
  labels_ = Hid(MDDP_HDF5_FILE_CHECK(H5Dopen2(file_, "/labels", H5P_DEFAULT), ctx + ": dataset /labels", "cannot open"));
  {
    Hid t(MDDP_HDF5_CHECK(H5Dget_type(inputs_)));
    MDDP_USAGE_CHECK(H5Tget_class(t) == H5T_FLOAT && H5Tget_size(t) == 4,
                     ctx << ": dataset /inputs has dtype " << type_name(t) << ", expected float32");
    Hid u(MDDP_HDF5_CHECK(H5Dget_type(labels_)));
    MDDP_USAGE_CHECK(H5Tget_class(u) == H5T_INTEGER && H5Tget_size(u) == 4 && H5Tget_sign(u) == H5T_SGN_2,
                     ctx << ": dataset /labels has dtype " << type_name(u) << ", expected int32");
  }
  const auto xd = dataset_dims(inputs_), yd = dataset_dims(labels_);
  MDDP_USAGE_CHECK(xd.size() == 2 && xd[0] >= 1 && xd[1] >= 1,
                   ctx << ": dataset /inputs has shape " << dims_string(xd) << ", expected (N, in_dim) with N, in_dim >= 1");
  MDDP_USAGE_CHECK(yd.size() == 1 && yd[0] == xd[0],
                   ctx << ": dataset /labels has shape " << dims_string(yd) << ", expected (" << xd[0] << ",) to match /inputs");
  rows_ = xd[0];
  in_dim_ = xd[1];
}

std::string Hdf5DataSource::describe() const {
  const auto slash = path_.find_last_of('/');
  return "hdf5:" + (slash == std::string::npos ? path_ : path_.substr(slash + 1)) + ":" + std::to_string(rows_) + "x" +
         std::to_string(in_dim_);
}

void Hdf5DataSource::read_rows(std::int64_t row, std::int64_t count, float* x, std::int32_t* y) const {
  Hid fsx(MDDP_HDF5_CHECK(H5Dget_space(inputs_)));
  Hid fsy(MDDP_HDF5_CHECK(H5Dget_space(labels_)));
  const hsize_t start[2] = {static_cast<hsize_t>(row), 0}, cnt[2] = {static_cast<hsize_t>(count), static_cast<hsize_t>(in_dim_)};
  MDDP_HDF5_CHECK(H5Sselect_hyperslab(fsx, H5S_SELECT_SET, start, nullptr, cnt, nullptr));
  MDDP_HDF5_CHECK(H5Sselect_hyperslab(fsy, H5S_SELECT_SET, start, nullptr, cnt, nullptr));
  const hsize_t mx[1] = {static_cast<hsize_t>(count * in_dim_)}, my[1] = {static_cast<hsize_t>(count)};
  Hid msx(MDDP_HDF5_CHECK(H5Screate_simple(1, mx, nullptr)));
  Hid msy(MDDP_HDF5_CHECK(H5Screate_simple(1, my, nullptr)));
  MDDP_HDF5_FILE_CHECK(H5Dread(inputs_, H5T_NATIVE_FLOAT, msx, fsx, H5P_DEFAULT, x), "dataset " + path_ + ": /inputs",
                       "cannot read rows " + std::to_string(row) + ".." + std::to_string(row + count - 1));
  MDDP_HDF5_FILE_CHECK(H5Dread(labels_, H5T_NATIVE_INT32, msy, fsy, H5P_DEFAULT, y), "dataset " + path_ + ": /labels",
                       "cannot read rows " + std::to_string(row) + ".." + std::to_string(row + count - 1));
  rows_read_ += count;
  for (std::int64_t r = 0; r < count; ++r) {
    MDDP_USAGE_CHECK(y[r] >= 0 && y[r] < classes_, "dataset " << path_ << ": /labels row " << row + r << " is " << y[r]
                                                              << ", outside [0, " << classes_ << ")");
    for (std::int64_t j = 0; j < in_dim_; ++j) {
      const float v = x[r * in_dim_ + j];
      MDDP_USAGE_CHECK(std::isfinite(v), "dataset " << path_ << ": /inputs row " << row + r << " column " << j << " is " << v
                                                    << " (NaN/Inf features are rejected)");
    }
  }
}

void Hdf5DataSource::fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const {
  MDDP_CHECK(first >= 0 && count >= 0, "bad sample range [" << first << ", " << first + count << ")");
  // Sample i is row i mod N; a range crossing the end of the file is split into contiguous pieces.
  std::int64_t done = 0;
  while (done < count) {
    const std::int64_t row = (first + done) % rows_;
    const std::int64_t n = std::min(count - done, rows_ - row);
    read_rows(row, n, x + done * in_dim_, y + done);
    done += n;
  }
}

DatasetReport scan_dataset(const std::string& path) {
  Hdf5DataSource src(path);
  DatasetReport r;
  r.samples = src.rows();
  r.in_dim = src.in_dim();
  r.classes = src.classes();
  {
    Hid file(MDDP_HDF5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)));
    r.seed = has_attr(file, "seed") ? read_attr_u64(file, "seed", "dataset " + path + ": attribute 'seed'") : 0;
  }
  r.label_counts.assign(static_cast<std::size_t>(r.classes), 0);
  const std::int64_t block = std::max<std::int64_t>(1, std::min<std::int64_t>(kBlockRows, (std::int64_t{1} << 26) / r.in_dim));
  std::vector<float> x(static_cast<std::size_t>(block * r.in_dim));
  std::vector<std::int32_t> y(static_cast<std::size_t>(block));
  for (std::int64_t first = 0; first < r.samples; first += block) {
    const std::int64_t n = std::min(block, r.samples - first);
    src.fill(first, n, x.data(), y.data());  // validates every row
    for (std::int64_t i = 0; i < n; ++i) ++r.label_counts[static_cast<std::size_t>(y[i])];
  }
  return r;
}

}  // namespace microddp::io
