// idx_import.cpp — check both IDX headers and every label, then stream the images into OUT.tmp in
// blocks (bounded memory), then publish.
#include "io/idx_import.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/error.hpp"
#include "core/timer.hpp"
#include "io/atomic_file.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"
#include "io/hdf5_dataset.hpp"
#include "io/idx_file.hpp"

namespace microddp::io {

namespace {

// Pixels per read/convert/write piece: 3 MiB of bytes, 12 MiB as float32 (4012 28x28 images).
constexpr std::int64_t kImportPieceBytes = std::int64_t{3} << 20;
// Labels per read: 64 KiB.
constexpr std::int64_t kLabelPieceBytes = std::int64_t{1} << 16;
constexpr std::uint32_t kImagesMagic = 0x00000803, kLabelsMagic = 0x00000801;

std::string dims_text(const std::vector<std::int64_t>& dims, std::size_t from, const char* sep) {
  std::ostringstream os;
  for (std::size_t i = from; i < dims.size(); ++i) os << (i > from ? sep : "") << dims[i];
  return os.str();
}

void check_images(const IdxReader& r) {
  const bool ok = r.type_code() == kIdxUnsignedByte && r.dims().size() >= 2;
  if (ok) return;
  std::ostringstream os;
  os << r.path() << ": wrong magic " << idx_magic_text(r.magic()) << " for an IDX images file: expected "
     << idx_magic_text(kImagesMagic) << " (unsigned bytes, count x rows x columns)";
  if (r.magic() == kLabelsMagic) {
    os << "; this is a labels file: are IMAGES and LABELS swapped?";
  } else {
    os << "; this file holds " << idx_type_name(r.type_code()) << " items in " << r.dims().size() << " dimension(s)";
  }
  core::throw_usage_error(os.str());
}

void check_labels(const IdxReader& r) {
  const bool ok = r.type_code() == kIdxUnsignedByte && r.dims().size() == 1;
  if (ok) return;
  std::ostringstream os;
  os << r.path() << ": wrong magic " << idx_magic_text(r.magic()) << " for an IDX labels file: expected "
     << idx_magic_text(kLabelsMagic) << " (unsigned bytes, one dimension: the count)";
  if (r.type_code() == kIdxUnsignedByte && r.dims().size() >= 3) {
    os << "; this is an images file (count x rows x columns): are IMAGES and LABELS swapped?";
  } else if (r.type_code() == kIdxUnsignedByte && r.dims().size() == 2) {
    // Two dimensions can be anything (several labels per item, flattened images): say what it is.
    os << "; this file holds unsigned bytes in 2 dimensions (" << dims_text(r.dims(), 0, " x ")
       << "), not one label per item";
  } else {
    os << "; this file holds " << idx_type_name(r.type_code()) << " items in " << r.dims().size() << " dimension(s)";
  }
  core::throw_usage_error(os.str());
}

// Writes elements [e0, e0 + count) of the row-major (rows, cols) float32 dataset DSET from X: the
// tail of a first row, whole rows, the head of a last row (at most three hyperslabs).
void write_flat_range(hid_t dset, std::int64_t cols, std::int64_t e0, std::int64_t count, const float* x) {
  std::int64_t done = 0;
  while (done < count) {
    const std::int64_t e = e0 + done, row = e / cols, col = e % cols;
    std::int64_t rows = 1, width = std::min(cols - col, count - done);
    if (col == 0 && count - done >= cols) {
      rows = (count - done) / cols;
      width = cols;
    }
    Hid fs(MDDP_HDF5_CHECK(H5Dget_space(dset)));
    const hsize_t start[2] = {static_cast<hsize_t>(row), static_cast<hsize_t>(col)};
    const hsize_t cnt[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(width)};
    MDDP_HDF5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, cnt, nullptr));
    Hid ms(MDDP_HDF5_CHECK(H5Screate_simple(2, cnt, nullptr)));
    MDDP_HDF5_CHECK(H5Dwrite(dset, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, x + done));
    done += rows * width;
  }
}

// Removes PATH.tmp unless disarmed (an import that failed half-way leaves nothing behind).
struct RemoveOnFailure {
  std::string path;
  bool armed = true;
  ~RemoveOnFailure() {
    if (armed) std::remove(path.c_str());
  }
};

}  // namespace

IdxImportResult import_idx(const IdxImportOptions& o) {
  hdf5_quiet();
  core::Stopwatch sw;
  MDDP_USAGE_CHECK(o.classes >= 2 && o.classes <= 256,
                   "an IDX import needs 2..256 classes (labels are unsigned bytes), got " << o.classes);
  IdxReader images(o.images), labels(o.labels);
  check_images(images);
  check_labels(labels);
  MDDP_USAGE_CHECK(images.count() == labels.count(), o.images << " holds " << images.count() << " images but "
                                                              << o.labels << " holds " << labels.count()
                                                              << " labels: not a matching pair");
  const std::int64_t n = images.count(), in_dim = images.item_bytes();

  IdxImportResult res;
  res.rows = n;
  res.in_dim = in_dim;
  res.classes = o.classes;
  res.image_dims.assign(images.dims().begin() + 1, images.dims().end());
  res.images_gzip = images.gzip();
  res.labels_gzip = labels.gzip();
  res.label_counts.assign(static_cast<std::size_t>(o.classes), 0);

  // Every label first: a bad one is reported before anything is written. Read in pieces and kept as
  // they arrive, so a gzip stream whose header claims 2^31 labels costs only the labels it holds
  // (a plain file's size was checked against its header when it opened).
  std::vector<std::int32_t> y;
  {
    std::vector<std::uint8_t> piece(static_cast<std::size_t>(std::min<std::int64_t>(kLabelPieceBytes, n)));
    for (std::int64_t i0 = 0; i0 < n;) {
      const std::int64_t m = std::min<std::int64_t>(kLabelPieceBytes, n - i0);
      labels.read(m, piece.data());
      for (std::int64_t i = 0; i < m; ++i) {
        const int v = piece[static_cast<std::size_t>(i)];
        MDDP_USAGE_CHECK(v < o.classes, o.labels << ": label " << v << " of item " << i0 + i << " is out of range: "
                                                 << o.classes << " classes means labels 0.." << o.classes - 1
                                                 << " (set the number of classes with --classes)");
        y.push_back(v);
        ++res.label_counts[static_cast<std::size_t>(v)];
      }
      i0 += m;
    }
    labels.expect_end();
  }

  const std::string tmp = temp_path(o.output);
  RemoveOnFailure cleanup{tmp};
  {
    Hid file(MDDP_HDF5_FILE_CHECK(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), tmp,
                                  "cannot create file"));
    write_attr(file, "format", std::string(kDatasetFormat));
    write_attr(file, "format_version", kDatasetFormatVersion);
    write_attr(file, "samples", n);
    write_attr(file, "in_dim", in_dim);
    write_attr(file, "classes", o.classes);
    write_attr(file, "generator", std::string("microddp make-dataset --from-idx (io/idx_import.hpp)"));
    write_attr(file, "scaling", std::string("pixel / 255 (float32), no standardisation"));
    write_attr(file, "source_images", o.images);
    write_attr(file, "source_labels", o.labels);
    write_attr(file, "image_shape", dims_text(images.dims(), 1, "x"));
    const hsize_t xd[2] = {static_cast<hsize_t>(n), static_cast<hsize_t>(in_dim)};
    const hsize_t yd[1] = {static_cast<hsize_t>(n)};
    Hid xs(MDDP_HDF5_CHECK(H5Screate_simple(2, xd, nullptr)));
    Hid ys(MDDP_HDF5_CHECK(H5Screate_simple(1, yd, nullptr)));
    Hid xds(MDDP_HDF5_CHECK(H5Dcreate2(file, "/inputs", H5T_IEEE_F32LE, xs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    Hid yds(MDDP_HDF5_CHECK(H5Dcreate2(file, "/labels", H5T_STD_I32LE, ys, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    MDDP_HDF5_CHECK(H5Dwrite(yds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, y.data()));

    // The pixels as one flat stream of n * in_dim bytes, in pieces of at most kImportPieceBytes
    // (whole rows when a row fits, else parts of one): memory stays one piece whatever the header
    // says, and a gzip stream that ends early is found before more than a piece is held.
    const std::int64_t total = images.data_bytes();
    const std::int64_t piece_bytes = std::min(total, in_dim <= kImportPieceBytes ? kImportPieceBytes / in_dim * in_dim
                                                                                 : kImportPieceBytes);
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(piece_bytes));
    std::vector<float> x(pixels.size());
    for (std::int64_t e0 = 0; e0 < total; e0 += piece_bytes) {
      const std::int64_t count = std::min(piece_bytes, total - e0);
      images.read_item_bytes(count, pixels.data());
      // One correctly rounded float32 division per pixel (not a multiplication by 1/255, which
      // rounds twice): the value numpy computes as np.float32(p) / np.float32(255).
      for (std::int64_t i = 0; i < count; ++i) {
        x[static_cast<std::size_t>(i)] = static_cast<float>(pixels[static_cast<std::size_t>(i)]) / 255.0f;
      }
      write_flat_range(xds, in_dim, e0, count, x.data());
    }
    images.expect_end();
    MDDP_HDF5_CHECK(H5Fflush(file, H5F_SCOPE_GLOBAL));
  }
  publish(tmp, o.output);
  cleanup.armed = false;
  res.seconds = sw.elapsed_s();
  return res;
}

}  // namespace microddp::io
