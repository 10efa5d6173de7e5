// hdf5_data_source.cpp — opening and validating a data file, hyperslab reads, inspect's scan.
#include "io/hdf5_data_source.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/error.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_dataset.hpp"

namespace microddp::io {

namespace {
// Rows per block when scanning a whole dataset: bounds memory (64 Ki labels = 512 KiB as int64).
constexpr std::int64_t kScanRows = 65536;
// The largest class count and input width the model accepts (train --classes/--in-dim; the bound
// io/checkpoint_schema checks too): it also bounds the buffers a crafted file can make us allocate.
constexpr std::int64_t kMaxClasses = std::int64_t{1} << 24;
constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;

// Selects rows [row, row + count) of a 1-D or 2-D dataset's file space; the memory space is flat.
struct RowSelection {
  Hid file_space, mem_space;
};
RowSelection select_rows(hid_t dset, std::int64_t row, std::int64_t count, std::int64_t cols) {
  RowSelection s;
  s.file_space = Hid(MDDP_HDF5_CHECK(H5Dget_space(dset)));
  const hsize_t start[2] = {static_cast<hsize_t>(row), 0};
  const hsize_t cnt[2] = {static_cast<hsize_t>(count), static_cast<hsize_t>(cols)};
  MDDP_HDF5_CHECK(H5Sselect_hyperslab(s.file_space, H5S_SELECT_SET, start, nullptr, cnt, nullptr));
  const hsize_t m[1] = {static_cast<hsize_t>(count * cols)};
  s.mem_space = Hid(MDDP_HDF5_CHECK(H5Screate_simple(1, m, nullptr)));
  return s;
}

// Integer label types that convert to int64 exactly (HDF5 would clip a larger uint64 silently).
bool labels_fit_int64(hid_t t) {
  if (H5Tget_class(t) != H5T_INTEGER) return false;
  const std::size_t size = H5Tget_size(t);
  return H5Tget_sign(t) == H5T_SGN_2 ? size <= 8 : size <= 4;
}
}  // namespace

Hdf5DataSource::Hdf5DataSource(const std::string& path, std::int64_t classes_if_absent, DataKeys keys)
    : path_(path), keys_(std::move(keys)), inputs_name_("/" + keys_.inputs), labels_name_("/" + keys_.labels) {
  hdf5_quiet();
  MDDP_USAGE_CHECK(::access(path.c_str(), R_OK) == 0, "dataset " << path << ": " << std::strerror(errno));
  MDDP_USAGE_CHECK(H5Fis_hdf5(path.c_str()) > 0, "dataset " << path << ": not an HDF5 file (truncated or wrong file?)");
  const std::string ctx = "dataset " + path;
  // The identity first: a file that changes between this stat and the open is caught by the first check.
  opened_ = identity_of(path);
  MDDP_USAGE_CHECK(opened_.bytes >= 0, ctx << ": " << std::strerror(opened_.error));
  file_ = Hid(MDDP_HDF5_FILE_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), ctx, "cannot open"));
  // Attributes are optional; a `format` that is not ours is a wrong file (a checkpoint, say).
  if (has_attr(file_, "format")) {
    const std::string fmt = read_attr_str(file_, "format", ctx + ": attribute 'format'");
    MDDP_USAGE_CHECK(fmt == kDatasetFormat, ctx << ": attribute 'format' is '" << fmt << "', expected '"
                                                << kDatasetFormat << "' (or no 'format' attribute at all)");
    const std::int64_t ver = read_attr_i64(file_, "format_version", ctx + ": attribute 'format_version'");
    MDDP_USAGE_CHECK(ver == kDatasetFormatVersion,
                     ctx << ": format_version is " << ver << ", this build reads " << kDatasetFormatVersion);
    microddp_format_ = true;
  }
  for (const std::string& d : {inputs_name_, labels_name_}) {
    MDDP_USAGE_CHECK(path_exists(file_, d), ctx << ": dataset " << d << " is missing"
                                                << (keys_.is_default() ? " (other names: --inputs-key, --labels-key)" : ""));
  }
  const std::string& xn = inputs_name_;
  const std::string& yn = labels_name_;
  inputs_ =
      Hid(MDDP_HDF5_FILE_CHECK(H5Dopen2(file_, xn.c_str(), H5P_DEFAULT), ctx + ": dataset " + xn, "cannot open"));
  labels_ =
      Hid(MDDP_HDF5_FILE_CHECK(H5Dopen2(file_, yn.c_str(), H5P_DEFAULT), ctx + ": dataset " + yn, "cannot open"));
  {
    Hid t(MDDP_HDF5_CHECK(H5Dget_type(inputs_)));
    inputs_dtype_ = type_name(t);
    inputs_u8_ = H5Tget_class(t) == H5T_INTEGER && H5Tget_size(t) == 1 && H5Tget_sign(t) == H5T_SGN_NONE;
    MDDP_USAGE_CHECK(inputs_u8_ || (H5Tget_class(t) == H5T_FLOAT && (H5Tget_size(t) == 4 || H5Tget_size(t) == 8)),
                     ctx << ": dataset " << xn << " has dtype " << inputs_dtype_
                         << ", expected float32, float64 or uint8 (pixels, scaled to p / 255)");
    inputs_f64_ = !inputs_u8_ && H5Tget_size(t) == 8;
    Hid u(MDDP_HDF5_CHECK(H5Dget_type(labels_)));
    labels_dtype_ = type_name(u);
    MDDP_USAGE_CHECK(labels_fit_int64(u),
                     ctx << ": dataset " << yn << " has dtype " << labels_dtype_
                         << ", expected integers: int32 or int64 (any of int8..int64, uint8..uint32)");
  }
  const auto xd = dataset_dims(inputs_), yd = dataset_dims(labels_);
  MDDP_USAGE_CHECK(xd.size() == 2 && xd[0] >= 1 && xd[1] >= 1, ctx << ": dataset " << xn << " has shape "
                                                                   << dims_string(xd)
                                                                   << ", expected (N, in_dim) with N, in_dim >= 1");
  MDDP_USAGE_CHECK(yd.size() == 1 && yd[0] == xd[0], ctx << ": dataset " << yn << " has shape " << dims_string(yd)
                                                         << ", expected (" << xd[0] << ",) to match " << xn);
  MDDP_USAGE_CHECK(xd[1] <= kMaxDim,
                   ctx << ": dataset " << xn << " has " << xd[1] << " columns, more than the model's limit " << kMaxDim);
  rows_ = xd[0];
  in_dim_ = xd[1];
  if (has_attr(file_, "classes")) {
    classes_ = read_attr_i64(file_, "classes", ctx + ": attribute 'classes'");
    MDDP_USAGE_CHECK(classes_ >= 2 && classes_ <= kMaxClasses,
                     ctx << ": attribute 'classes' is " << classes_ << ", expected 2.." << kMaxClasses);
    classes_from_ = ClassesFrom::Attribute;
  } else if (classes_if_absent > 0) {
    classes_ = classes_if_absent;
    classes_from_ = ClassesFrom::Caller;
  } else {
    classes_ = infer_classes();
    classes_from_ = ClassesFrom::MaxLabel;
  }
}

Hdf5DataSource::FileIdentity Hdf5DataSource::identity_of(const std::string& path) {
  struct stat st {};
  FileIdentity id;
  if (::stat(path.c_str(), &st) != 0) {
    id.bytes = -1;
    id.error = errno;
    return id;
  }
  id.device = static_cast<std::uint64_t>(st.st_dev);
  id.inode = static_cast<std::uint64_t>(st.st_ino);
  id.bytes = static_cast<std::int64_t>(st.st_size);
  id.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return id;
}

void Hdf5DataSource::check_unchanged() const {
  const FileIdentity now = identity_of(path_);
  std::ostringstream what;
  if (now.bytes < 0) {
    what << "it can no longer be found (" << std::strerror(now.error) << ": removed or renamed?)";
  } else if (now.device != opened_.device || now.inode != opened_.inode) {
    what << "another file now stands at its path (replaced; " << now.bytes << " bytes)";
  } else if (now.bytes != opened_.bytes) {
    what << "its size went from " << opened_.bytes << " to " << now.bytes << " bytes"
         << (now.bytes < opened_.bytes ? " (truncated)" : "");
  } else if (now.mtime_ns != opened_.mtime_ns) {
    what << "it was modified (same size, " << now.bytes << " bytes, new modification time)";
  } else {
    return;
  }
  core::throw_usage_error("dataset " + path_ + " changed on disk during the run: " + what.str() +
                          ". Stopped: rows of a file that changes under a run are never used (restore the file, or "
                          "start a new run on it as it is now)");
}

std::int64_t Hdf5DataSource::infer_classes() const {
  std::vector<std::int64_t> y(static_cast<std::size_t>(std::min(kScanRows, rows_)));
  std::int64_t max_label = -1;
  for (std::int64_t first = 0; first < rows_; first += kScanRows) {
    const std::int64_t n = std::min(kScanRows, rows_ - first);
    const RowSelection sel = select_rows(labels_, first, n, 1);
    MDDP_HDF5_FILE_CHECK(H5Dread(labels_, H5T_NATIVE_INT64, sel.mem_space, sel.file_space, H5P_DEFAULT, y.data()),
                         "dataset " + path_ + ": " + labels_name_,
                         "cannot read rows " + std::to_string(first) + ".." + std::to_string(first + n - 1));
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t v = y[static_cast<std::size_t>(i)];
      MDDP_USAGE_CHECK(v >= 0, "dataset " << path_ << ": " << labels_name_ << " row " << first + i << " is " << v
                                          << ", labels must be >= 0");
      max_label = std::max(max_label, v);
    }
  }
  MDDP_USAGE_CHECK(max_label >= 1 && max_label < kMaxClasses,
                   "dataset " << path_ << ": " << labels_name_ << " has maximum " << max_label
                              << ", so max label + 1 = " << max_label + 1 << " classes, outside 2.." << kMaxClasses
                              << " (give --classes, or a 'classes' attribute)");
  return max_label + 1;
}

std::string Hdf5DataSource::describe() const {
  const auto slash = path_.find_last_of('/');
  // Dataset names only when not the usual ones: a file read as always describes itself as always.
  return "hdf5:" + (slash == std::string::npos ? path_ : path_.substr(slash + 1)) + ":" + std::to_string(rows_) + "x" +
         std::to_string(in_dim_) + (keys_.is_default() ? "" : ":" + inputs_name_ + "," + labels_name_);
}

std::string Hdf5DataSource::summary() const {
  std::ostringstream os;
  os << path_ << ": " << rows_ << " rows x " << in_dim_ << " features (" << inputs_dtype_
     << (inputs_f64_ ? ", converted to float32 on read" : "") << (inputs_u8_ ? ", scaled to p / 255 on read" : "")
     << "), labels " << labels_dtype_ << ", " << classes_ << " classes";
  if (!keys_.is_default()) os << "; datasets " << inputs_name_ << ", " << labels_name_;
  switch (classes_from_) {
    case ClassesFrom::Attribute:
      os << " (attribute 'classes')";
      break;
    case ClassesFrom::Caller:
      break;
    case ClassesFrom::MaxLabel:
      os << " = max label + 1 (no 'classes' attribute; --classes overrides)";
      break;
  }
  return os.str();
}

void Hdf5DataSource::read_rows(std::int64_t row, std::int64_t count, float* x, std::int32_t* y) const {
  try {
    read_rows_unchecked(row, count, x, y);
  } catch (...) {
    check_unchanged();  // a read that failed on a file that changed: say that, not the read's symptom
    throw;
  }
}

void Hdf5DataSource::read_rows_unchecked(std::int64_t row, std::int64_t count, float* x, std::int32_t* y) const {
  const std::string rows_text = "cannot read rows " + std::to_string(row) + ".." + std::to_string(row + count - 1);
  const RowSelection xs = select_rows(inputs_, row, count, in_dim_);
  const RowSelection ys = select_rows(labels_, row, count, 1);
  const auto n = static_cast<std::size_t>(count * in_dim_);
  const std::string xwhere = "dataset " + path_ + ": " + inputs_name_;
  if (inputs_f64_) {
    if (x64_.size() < n) x64_.resize(n);
    MDDP_HDF5_FILE_CHECK(H5Dread(inputs_, H5T_NATIVE_DOUBLE, xs.mem_space, xs.file_space, H5P_DEFAULT, x64_.data()),
                         xwhere, rows_text);
  } else if (inputs_u8_) {
    if (x8_.size() < n) x8_.resize(n);
    MDDP_HDF5_FILE_CHECK(H5Dread(inputs_, H5T_NATIVE_UCHAR, xs.mem_space, xs.file_space, H5P_DEFAULT, x8_.data()),
                         xwhere, rows_text);
    // One correctly rounded float32 division per pixel, as the IDX import (io/idx_import.hpp).
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(x8_[i]) / 255.0f;
  } else {
    MDDP_HDF5_FILE_CHECK(H5Dread(inputs_, H5T_NATIVE_FLOAT, xs.mem_space, xs.file_space, H5P_DEFAULT, x), xwhere,
                         rows_text);
  }
  if (y64_.size() < static_cast<std::size_t>(count)) y64_.resize(static_cast<std::size_t>(count));
  MDDP_HDF5_FILE_CHECK(H5Dread(labels_, H5T_NATIVE_INT64, ys.mem_space, ys.file_space, H5P_DEFAULT, y64_.data()),
                       "dataset " + path_ + ": " + labels_name_, rows_text);
  rows_read_ += count;
  for (std::int64_t r = 0; r < count; ++r) {
    const std::int64_t label = y64_[static_cast<std::size_t>(r)];
    MDDP_USAGE_CHECK(label >= 0 && label < classes_, "dataset " << path_ << ": " << labels_name_ << " row " << row + r
                                                                << " is " << label << ", outside [0, " << classes_
                                                                << ")");
    y[r] = static_cast<std::int32_t>(label);  // < classes <= 2^24
    for (std::int64_t j = 0; j < in_dim_; ++j) {
      const std::int64_t i = r * in_dim_ + j;
      if (inputs_f64_) {
        const double v = x64_[static_cast<std::size_t>(i)];
        MDDP_USAGE_CHECK(std::isfinite(v), xwhere << " row " << row + r << " column " << j << " is " << v
                                                  << " (NaN/Inf features are rejected)");
        MDDP_USAGE_CHECK(std::abs(v) <= static_cast<double>(FLT_MAX),
                         xwhere << " row " << row + r << " column " << j << " is " << v
                                << ", outside the float32 range the model computes in");
        x[i] = static_cast<float>(v);  // round to nearest, as numpy's astype(float32)
      } else {
        MDDP_USAGE_CHECK(std::isfinite(x[i]), xwhere << " row " << row + r << " column " << j << " is " << x[i]
                                                     << " (NaN/Inf features are rejected)");
      }
    }
  }
}

void Hdf5DataSource::fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const {
  MDDP_CHECK(first >= 0 && count >= 0, "bad sample range [" << first << ", " << first + count << ")");
  // Sample i is row i mod N; a range crossing the end of the file is split into contiguous pieces.
  const auto dim = static_cast<std::size_t>(in_dim_);
  std::int64_t done = 0;
  while (done < count) {
    const std::int64_t row = (first + done) % rows_;
    const std::int64_t n = std::min(count - done, rows_ - row);
    if (resident()) {
      std::copy_n(resident_x_.data() + static_cast<std::size_t>(row) * dim, static_cast<std::size_t>(n) * dim,
                  x + static_cast<std::size_t>(done) * dim);
      std::copy_n(resident_y_.data() + row, n, y + done);
    } else {
      read_rows(row, n, x + done * in_dim_, y + done);
    }
    done += n;
  }
  if (!resident()) check_unchanged();  // after the reads: what they returned came from the file as opened
}

bool Hdf5DataSource::make_resident() const {
  const std::int64_t bytes = rows_ * in_dim_ * static_cast<std::int64_t>(sizeof(float)) +
                             rows_ * static_cast<std::int64_t>(sizeof(std::int32_t));
  if (!resident() && bytes <= resident_limit_bytes_) {
    // Whole file once, in blocks through read_rows (which validates every row).
    const auto dim = static_cast<std::size_t>(in_dim_);
    resident_x_.resize(static_cast<std::size_t>(rows_) * dim);
    resident_y_.resize(static_cast<std::size_t>(rows_));
    for (std::int64_t first = 0; first < rows_; first += kScanRows) {
      const std::int64_t n = std::min(kScanRows, rows_ - first);
      read_rows(first, n, resident_x_.data() + static_cast<std::size_t>(first) * dim, resident_y_.data() + first);
    }
    check_unchanged();
  }
  return resident();
}

bool Hdf5DataSource::prepare_fill_off_thread() const { return make_resident(); }

void Hdf5DataSource::fill_rows(const std::int64_t* rows, std::int64_t count, float* x, std::int32_t* y) const {
  for (std::int64_t i = 0; i < count; ++i) {
    MDDP_CHECK(rows[i] >= 0 && rows[i] < rows_, "row " << rows[i] << " outside the " << rows_ << " rows of " << path_);
  }
  const auto dim = static_cast<std::size_t>(in_dim_);
  if (make_resident()) {
    for (std::int64_t i = 0; i < count; ++i) {
      const auto r = static_cast<std::size_t>(rows[i]);
      std::copy_n(resident_x_.data() + r * dim, dim, x + static_cast<std::size_t>(i) * dim);
      y[i] = resident_y_[r];
    }
    return;
  }
  // Too large to keep: sort the request by row, read each run of consecutive rows with one
  // hyperslab, and put every row where the request wants it.
  order_.resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) order_[static_cast<std::size_t>(i)] = i;
  std::sort(order_.begin(), order_.end(), [rows](std::int64_t a, std::int64_t b) { return rows[a] < rows[b]; });
  std::int64_t i = 0;
  while (i < count) {
    const std::int64_t start = rows[order_[static_cast<std::size_t>(i)]];
    std::int64_t j = i + 1;  // extend over repeats and the next row
    while (j < count && rows[order_[static_cast<std::size_t>(j)]] - rows[order_[static_cast<std::size_t>(j - 1)]] <= 1)
      ++j;
    const std::int64_t n = rows[order_[static_cast<std::size_t>(j - 1)]] - start + 1;
    if (run_y_.size() < static_cast<std::size_t>(n)) {
      run_x_.resize(static_cast<std::size_t>(n) * dim);
      run_y_.resize(static_cast<std::size_t>(n));
    }
    read_rows(start, n, run_x_.data(), run_y_.data());
    for (std::int64_t k = i; k < j; ++k) {
      const std::int64_t pos = order_[static_cast<std::size_t>(k)];
      const auto off = static_cast<std::size_t>(rows[pos] - start);
      std::copy_n(run_x_.data() + off * dim, dim, x + static_cast<std::size_t>(pos) * dim);
      y[pos] = run_y_[off];
    }
    i = j;
  }
  check_unchanged();
}

DatasetReport scan_dataset(const std::string& path) {
  Hdf5DataSource src(path);
  DatasetReport r;
  r.samples = src.rows();
  r.in_dim = src.in_dim();
  r.classes = src.classes();
  r.microddp_format = src.microddp_format();
  r.classes_inferred = src.classes_from() == Hdf5DataSource::ClassesFrom::MaxLabel;
  r.inputs_dtype = src.inputs_dtype();
  r.labels_dtype = src.labels_dtype();
  {
    Hid file(MDDP_HDF5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)));
    r.has_seed = has_attr(file, "seed");
    if (r.has_seed) r.seed = read_attr_u64(file, "seed", "dataset " + path + ": attribute 'seed'");
  }
  r.label_counts.assign(static_cast<std::size_t>(r.classes), 0);
  // At most 2^26 floats (256 MiB) per block, and at most kScanRows rows.
  const std::int64_t block =
      std::max<std::int64_t>(1, std::min<std::int64_t>(kScanRows, (std::int64_t{1} << 26) / r.in_dim));
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
