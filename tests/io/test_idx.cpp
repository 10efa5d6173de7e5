// test_idx.cpp — IDX files written here (plain and gzip) through IdxReader and import_idx:
//   * headers, items in blocks, gzip recognised by content (not name);
//   * the import: /inputs == pixel / 255 as float32 (bitwise), /labels as written, the attributes,
//     plain and gzip giving the same file;
//   * bad input, each a core::UsageError naming the file and the problem, leaving no output:
//     wrong magic (not IDX; images and labels swapped), truncated (header, items; plain and gzip),
//     extra bytes, a count mismatch, a label out of range, a missing file.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"
#include "io/hdf5_data_source.hpp"
#include "io/idx_file.hpp"
#include "io/idx_import.hpp"

namespace microddp::io {
namespace {

// A fresh directory for the files of this run, removed at exit.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/test_idx_XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    path = d != nullptr ? d : "";
  }
  ~TempDir() {
    if (!path.empty()) std::filesystem::remove_all(path);
  }
};
const std::string& temp_dir() {
  static const TempDir dir;
  return dir.path;
}

std::vector<unsigned char> idx_bytes(std::uint32_t magic, const std::vector<std::uint32_t>& dims,
                                     const std::vector<unsigned char>& items) {
  std::vector<unsigned char> b;
  auto put32 = [&](std::uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
  };
  put32(magic);
  for (auto d : dims) put32(d);
  b.insert(b.end(), items.begin(), items.end());
  return b;
}

std::string write_file(const std::string& name, const std::vector<unsigned char>& bytes, bool gzip) {
  const std::string path = temp_dir() + "/" + name;
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    if (!bytes.empty()) {
      EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    }
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  return path;
}

std::vector<unsigned char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// 5 images of 3 x 2 pixels covering 0 and 255, labels 0..3.
constexpr int kN = 5, kRows = 3, kCols = 2;
std::vector<unsigned char> pixels() {
  std::vector<unsigned char> p(kN * kRows * kCols);
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<unsigned char>((i * 37 + 11) % 256);
  p[0] = 0;
  p[1] = 255;
  return p;
}
const std::vector<unsigned char> kLabels = {3, 0, 2, 1, 3};

std::vector<unsigned char> images_file() { return idx_bytes(0x803, {kN, kRows, kCols}, pixels()); }
std::vector<unsigned char> labels_file() { return idx_bytes(0x801, {kN}, kLabels); }

// The message of the UsageError that import_idx throws (and no output file), or "" if it did not.
std::string import_error(const std::string& images, const std::string& labels, std::int64_t classes = 4) {
  const std::string out = temp_dir() + "/bad.h5";
  std::remove(out.c_str());
  try {
    import_idx({images, labels, out, classes});
  } catch (const core::UsageError& e) {
    EXPECT_FALSE(exists(out)) << "a failed import left " << out;
    EXPECT_FALSE(exists(out + ".tmp")) << "a failed import left " << out << ".tmp";
    return e.what();
  }
  ADD_FAILURE() << "import of " << images << " + " << labels << " succeeded";
  return "";
}

#define EXPECT_MESSAGE(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(IdxReader, ReadsHeaderAndItemsInBlocksPlainAndGzip) {
  for (bool gz : {false, true}) {
    // The name says nothing: gzip is recognised by its first bytes.
    const std::string path = write_file(gz ? "img_gz.idx" : "img_plain.gz", images_file(), gz);
    IdxReader r(path);
    EXPECT_EQ(r.gzip(), gz);
    EXPECT_EQ(r.magic(), 0x803u);
    EXPECT_EQ(r.type_code(), kIdxUnsignedByte);
    EXPECT_EQ(r.dims(), (std::vector<std::int64_t>{kN, kRows, kCols}));
    EXPECT_EQ(r.item_bytes(), kRows * kCols);
    std::vector<unsigned char> got(kN * kRows * kCols);
    r.read(2, got.data());
    r.read(3, got.data() + 2 * kRows * kCols);
    r.expect_end();
    EXPECT_EQ(got, pixels());
    EXPECT_THROW(r.read(1, got.data()), core::Error);  // past the count: a caller's bug
  }
}

TEST(IdxImport, PixelsOver255AndLabelsPlainAndGzipAlike) {
  std::vector<std::vector<float>> inputs;
  for (bool gz : {false, true}) {
    const std::string img = write_file(gz ? "i.gz" : "i.idx", images_file(), gz);
    const std::string lab = write_file(gz ? "l.gz" : "l.idx", labels_file(), gz);
    const std::string out = temp_dir() + (gz ? "/gz.h5" : "/plain.h5");
    const IdxImportResult r = import_idx({img, lab, out, 4});
    EXPECT_EQ(r.rows, kN);
    EXPECT_EQ(r.in_dim, kRows * kCols);
    EXPECT_EQ(r.image_dims, (std::vector<std::int64_t>{kRows, kCols}));
    EXPECT_EQ(r.label_counts, (std::vector<std::int64_t>{1, 1, 1, 2}));
    EXPECT_EQ(r.images_gzip, gz);
    EXPECT_FALSE(exists(out + ".tmp"));

    const Hdf5DataSource src(out);
    EXPECT_TRUE(src.microddp_format());
    EXPECT_EQ(src.rows(), kN);
    EXPECT_EQ(src.in_dim(), kRows * kCols);
    EXPECT_EQ(src.classes(), 4);  // the attribute: the import's --classes
    std::vector<float> x(kN * kRows * kCols);
    std::vector<std::int32_t> y(kN);
    src.fill(0, kN, x.data(), y.data());
    const auto p = pixels();
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(x[i], static_cast<float>(p[i]) / 255.0f) << i;  // bitwise: one float32 division
    }
    EXPECT_EQ(x[0], 0.0f);
    EXPECT_EQ(x[1], 1.0f);
    for (int i = 0; i < kN; ++i) EXPECT_EQ(y[static_cast<std::size_t>(i)], kLabels[static_cast<std::size_t>(i)]);
    Hid f(H5Fopen(out.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    EXPECT_EQ(read_attr_str(f, "image_shape", out), "3x2");
    EXPECT_EQ(read_attr_str(f, "scaling", out).substr(0, 11), "pixel / 255");
    inputs.push_back(x);
  }
  EXPECT_EQ(inputs[0], inputs[1]);
}

TEST(IdxImport, WrongMagic) {
  const std::string lab = write_file("ok_l.idx", labels_file(), false);
  const std::string img = write_file("ok_i.idx", images_file(), false);
  auto not_idx = images_file();
  not_idx[0] = 0x12;
  std::string m = import_error(write_file("magic.idx", not_idx, false), lab);
  EXPECT_MESSAGE(m, "magic.idx: wrong magic 0x12000803: not an IDX file");
  // A float32 images file is IDX, but not what we import.
  m = import_error(write_file("f32.idx", idx_bytes(0xD03, {1, 1, 1}, {0, 0, 0, 0}), false), lab);
  EXPECT_MESSAGE(m, "wrong magic 0x00000d03 for an IDX images file: expected 0x00000803");
  m = import_error(lab, img);  // swapped
  EXPECT_MESSAGE(m, "ok_l.idx: wrong magic 0x00000801 for an IDX images file");
  EXPECT_MESSAGE(m, "swapped");
  m = import_error(img, img);
  EXPECT_MESSAGE(m, "ok_i.idx: wrong magic 0x00000803 for an IDX labels file: expected 0x00000801");
  EXPECT_MESSAGE(m, "this is an images file");
  // Two dimensions of bytes (say two labels per item) are no images file: said as what they are.
  m = import_error(img, write_file("two_d.idx", idx_bytes(0x802, {5, 2}, std::vector<unsigned char>(10, 1)), false));
  EXPECT_MESSAGE(m, "two_d.idx: wrong magic 0x00000802 for an IDX labels file");
  EXPECT_MESSAGE(m, "unsigned bytes in 2 dimensions (5 x 2), not one label per item");
  EXPECT_EQ(m.find("images file"), std::string::npos) << m;
}

TEST(IdxImport, TruncatedPlainAndGzip) {
  const std::string lab = write_file("t_l.idx", labels_file(), false);
  auto short_items = images_file();
  short_items.resize(short_items.size() - 4);  // the last image lacks 4 of its 6 bytes
  for (bool gz : {false, true}) {
    const std::string m = import_error(write_file(gz ? "short.gz" : "short.idx", short_items, gz), lab);
    EXPECT_MESSAGE(m, "truncated");
    EXPECT_MESSAGE(m, "promises 30 bytes of items after its 16 bytes");
    EXPECT_MESSAGE(m, "ends after 26");
  }
  // A gzip file cut in the middle of its compressed stream.
  const std::string full = write_file("cut_src.gz", images_file(), true);
  auto bytes = read_all(full);
  bytes.resize(bytes.size() / 2);
  std::string m = import_error(write_file("cut.gz", bytes, false), lab);
  EXPECT_MESSAGE(m, "cut.gz");
  EXPECT_TRUE(m.find("truncated") != std::string::npos || m.find("corrupt gzip") != std::string::npos) << m;
  // Inside the header, and an empty file.
  auto short_header = images_file();
  short_header.resize(10);
  m = import_error(write_file("head.idx", short_header, false), lab);
  EXPECT_MESSAGE(m, "truncated: the header of 3 dimensions needs 16 bytes, the file has 10");
  m = import_error(write_file("empty.idx", {}, false), lab);
  EXPECT_MESSAGE(m, "the file has 0 bytes");
}

TEST(IdxImport, ExtraBytesCountMismatchLabelRangeMissingFile) {
  const std::string img = write_file("e_i.idx", images_file(), false);
  auto longer = labels_file();
  longer.push_back(7);
  std::string m = import_error(img, write_file("long_l.idx", longer, false));
  EXPECT_MESSAGE(m, "long_l.idx: 1 extra bytes after the last of the 5 items");
  m = import_error(img, write_file("four_l.idx", idx_bytes(0x801, {4}, {0, 1, 2, 3}), true));
  EXPECT_MESSAGE(m, "holds 5 images but");
  EXPECT_MESSAGE(m, "four_l.idx holds 4 labels");
  m = import_error(img, write_file("big_l.idx", idx_bytes(0x801, {5}, {0, 1, 2, 12, 3}), false));
  EXPECT_MESSAGE(m, "big_l.idx: label 12 of item 3 is out of range: 4 classes means labels 0..3");
  m = import_error(temp_dir() + "/no_such_file", img);
  EXPECT_MESSAGE(m, "no_such_file: cannot open");
}

}  // namespace
}  // namespace microddp::io
