// npy_import.cpp — labels first (all checked), then the inputs in blocks into OUT.tmp, then publish.
#include "io/npy_import.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/error.hpp"
#include "core/timer.hpp"
#include "io/dataset_writer.hpp"
#include "io/npy_file.hpp"
#include "io/zip_archive.hpp"

namespace microddp::io {

namespace {

constexpr std::int64_t kImportBlockElements = std::int64_t{1} << 22;  // elements per read/convert/write block (<= 32 MiB)
constexpr std::int64_t kImportMaxInDim = std::int64_t{1} << 24;        // the model's bound (train --in-dim)
constexpr std::int64_t kImportMaxClasses = std::int64_t{1} << 24;
constexpr double kExactIntegers = 16777216.0;  // 2^24: every integer up to it is exact in float32

std::unique_ptr<NpyReader> open_member(const ZipArchive& zip, const std::string& key, const char* option) {
  const ZipArchive::Member* m = zip.find(key + ".npy");
  if (m == nullptr) {
    std::string keys;
    for (const auto& x : zip.members()) {
      std::string k = x.name;
      if (k.size() > 4 && k.compare(k.size() - 4, 4, ".npy") == 0) k.resize(k.size() - 4);
      keys += (keys.empty() ? "" : ", ") + k;
    }
    core::throw_usage_error(zip.path() + " has no array '" + key + "' (it holds: " + (keys.empty() ? "nothing" : keys) +
                            "); name the arrays with " + option + " (np.savez(f, x=inputs, y=labels) writes x and y)");
  }
  return std::make_unique<NpyReader>(zip.open(*m));
}

// Element i of a block of raw host-order integers as int64; an unsigned value beyond int64 is
// reported through `big` (it is out of every range we accept anyway).
std::int64_t integer_at(const NpyDtype& t, const unsigned char* raw, std::int64_t i, bool& big) {
  const unsigned char* p = raw + i * t.bytes;
  if (t.kind == 'i') {
    switch (t.bytes) {
      case 1: return static_cast<std::int8_t>(p[0]);
      case 2: { std::int16_t v; std::memcpy(&v, p, 2); return v; }
      case 4: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
      default: { std::int64_t v; std::memcpy(&v, p, 8); return v; }
    }
  }
  switch (t.bytes) {
    case 1: return p[0];
    case 2: { std::uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { std::uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: {
      std::uint64_t v;
      std::memcpy(&v, p, 8);
      big = v > static_cast<std::uint64_t>(INT64_MAX);
      return static_cast<std::int64_t>(v & static_cast<std::uint64_t>(INT64_MAX));
    }
  }
}

std::string scaling_of(const NpyDtype& t) {
  if (t.kind == 'f') return t.bytes == 4 ? "none (float32 as given)" : "float64 rounded to float32";
  if (t.kind == 'u' && t.bytes == 1) return "pixel / 255 (float32), no standardisation";
  return "integers as float32 values (exact: |v| <= 2^24)";
}

}  // namespace

NpyImportResult import_npy(const NpyImportOptions& o) {
  core::Stopwatch sw;
  std::unique_ptr<NpyReader> xr, yr;
  if (!o.npz_path.empty()) {
    const ZipArchive zip(o.npz_path);
    xr = open_member(zip, o.x_key, "--x-key");
    yr = open_member(zip, o.y_key, "--y-key");
  } else {
    xr = std::make_unique<NpyReader>(open_file_source(o.x_path));
    yr = std::make_unique<NpyReader>(open_file_source(o.y_path));
  }
  const NpyHeader& xh = xr->header();
  const NpyHeader& yh = yr->header();
  const std::string& xn = xr->name();
  const std::string& yn = yr->name();

  // Shapes and dtypes.
  MDDP_USAGE_CHECK(!xh.shape.empty() && xh.shape[0] >= 1,
                   xn << ": inputs of shape " << xh.shape_text() << ": expected (N, ...) with N >= 1 rows");
  MDDP_USAGE_CHECK(xh.dtype.kind != 'b', xn << ": bool inputs (" << xh.dtype.descr
                                            << "): convert them first (x.astype(np.float32))");
  const std::int64_t n = xh.shape[0];
  std::int64_t in_dim = 1;
  std::string row_shape;
  for (std::size_t k = 1; k < xh.shape.size(); ++k) {
    in_dim *= xh.shape[k];  // bounded: the element count fits in int64 (npy_file checks)
    row_shape += (row_shape.empty() ? "" : "x") + std::to_string(xh.shape[k]);
    MDDP_USAGE_CHECK(in_dim >= 1 && in_dim <= kImportMaxInDim, xn << ": rows of shape " << row_shape << "... hold "
                                                           << in_dim << " features: expected 1.." << kImportMaxInDim);
  }
  if (row_shape.empty()) row_shape = "1";
  MDDP_USAGE_CHECK(yh.dtype.kind == 'i' || yh.dtype.kind == 'u',
                   yn << ": labels of dtype " << yh.dtype.name()
                      << ": expected integers (any of int8..int64, uint8..uint64): y.astype(np.int64)");
  const bool y_ok = (yh.shape.size() == 1 || (yh.shape.size() == 2 && yh.shape[1] == 1));
  MDDP_USAGE_CHECK(y_ok && yh.shape[0] == n, yn << ": labels of shape " << yh.shape_text() << ", expected (" << n
                                                << ",) to match the " << n << " rows of " << xn << " "
                                                << xh.shape_text());

  // Every label, checked before anything is written (N x 8 bytes at most: the file holds them).
  NpyImportResult res;
  res.rows = n;
  res.in_dim = in_dim;
  res.x_source = xn;
  res.y_source = yn;
  res.x_dtype = xh.dtype.name();
  res.y_dtype = yh.dtype.name();
  res.row_shape = row_shape;
  res.scaling = scaling_of(xh.dtype);
  std::vector<unsigned char> raw(static_cast<std::size_t>(n * yh.dtype.bytes));
  yr->read(n, raw.data());
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  std::int64_t max_label = -1;
  const std::int64_t limit = o.classes > 0 ? o.classes : kImportMaxClasses;
  for (std::int64_t i = 0; i < n; ++i) {
    bool big = false;
    const std::int64_t v = integer_at(yh.dtype, raw.data(), i, big);
    MDDP_USAGE_CHECK(!big && v >= 0 && v < limit,
                     yn << ": label " << (big ? std::string("beyond 2^63") : std::to_string(v)) << " of row " << i
                        << " is out of range: "
                        << (o.classes > 0 ? std::to_string(o.classes) + " classes means labels 0.." +
                                                std::to_string(o.classes - 1) + " (set the number with --classes)"
                                          : "labels must lie in [0, 2^24)"));
    y[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v);
    max_label = std::max(max_label, v);
  }
  res.classes = o.classes > 0 ? o.classes : max_label + 1;
  MDDP_USAGE_CHECK(res.classes >= 2, yn << ": every label is " << max_label
                                        << ": a classification needs 2 classes at least (give --classes)");
  res.label_counts.assign(static_cast<std::size_t>(res.classes), 0);
  for (const std::int32_t v : y) ++res.label_counts[static_cast<std::size_t>(v)];

  DatasetWriter out(o.output, n, in_dim, res.classes,
                    "microddp make-dataset " + std::string(o.npz_path.empty() ? "--from-npy" : "--from-npz") +
                        " (io/npy_import.hpp)");
  out.attribute("scaling", res.scaling);
  out.attribute("input_shape", row_shape);
  out.attribute("source_inputs", xn + " " + xh.dtype.descr + " " + xh.shape_text());
  out.attribute("source_labels", yn + " " + yh.dtype.descr + " " + yh.shape_text());

  const std::int64_t block = std::max<std::int64_t>(1, std::min(n, kImportBlockElements / in_dim));
  raw.assign(static_cast<std::size_t>(block * in_dim * xh.dtype.bytes), 0);
  std::vector<float> x(static_cast<std::size_t>(block * in_dim));
  const NpyDtype& t = xh.dtype;
  for (std::int64_t r0 = 0; r0 < n; r0 += block) {
    const std::int64_t rows = std::min(block, n - r0);
    const std::int64_t count = rows * in_dim;
    xr->read(count, raw.data());
    for (std::int64_t i = 0; i < count; ++i) {
      auto where = [&] {
        return xn + ": row " + std::to_string(r0 + i / in_dim) + " column " + std::to_string(i % in_dim);
      };
      if (t.kind == 'f') {
        double v = 0;
        if (t.bytes == 4) {
          float f;
          std::memcpy(&f, raw.data() + i * 4, 4);
          v = f;
        } else {
          std::memcpy(&v, raw.data() + i * 8, 8);
        }
        MDDP_USAGE_CHECK(std::isfinite(v), where() << " is " << v << " (NaN/Inf inputs are rejected)");
        MDDP_USAGE_CHECK(std::abs(v) <= static_cast<double>(FLT_MAX),
                         where() << " is " << v << ", outside the float32 range the model computes in");
        x[static_cast<std::size_t>(i)] = static_cast<float>(v);  // round to nearest, as numpy's astype(float32)
      } else if (t.kind == 'u' && t.bytes == 1) {
        // One correctly rounded float32 division per pixel: the IDX import's bits.
        x[static_cast<std::size_t>(i)] = static_cast<float>(raw[static_cast<std::size_t>(i)]) / 255.0f;
      } else {
        bool big = false;
        const std::int64_t v = integer_at(t, raw.data(), i, big);
        MDDP_USAGE_CHECK(!big && std::abs(static_cast<double>(v)) <= kExactIntegers,
                         where() << " is " << (big ? std::string("beyond 2^63") : std::to_string(v))
                                 << ": integer inputs beyond 2^24 are not exact in float32 (scale them first)");
        x[static_cast<std::size_t>(i)] = static_cast<float>(v);
      }
    }
    out.write_rows(r0, rows, x.data(), y.data() + r0);
  }
  out.publish();
  res.seconds = sw.elapsed_s();
  return res;
}

}  // namespace microddp::io
