// test_npy.cpp — the NumPy reader (io/npy_file.hpp), the zip reader (io/zip_archive.hpp) and the
// import (io/npy_import.hpp) on files this test writes byte by byte, so that it runs without numpy
// (tests/io/numpy_data.sh checks the same against numpy's own files where numpy is installed):
//   * headers of format 1.0 and 2.0 parse (dtype, shape, order; Python 2's "L" suffix); every
//     malformed header is a UsageError naming the file: magic, version, a structured or unknown
//     dtype, a missing or unknown key, unbalanced syntax, a shape beyond int64, Fortran order;
//   * the data must be exactly the header's bytes (truncated, extra); big-endian elements swap;
//   * a zip archive's stored and deflated members read back byte for byte (zip64 extra fields
//     included); a damaged CRC, a truncated archive and a missing end record are UsageErrors;
//   * an import of uint8 images gives p / 255.0f and int32 labels, and a bad label leaves no file.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/npy_file.hpp"
#include "io/npy_import.hpp"
#include "io/zip_archive.hpp"

namespace microddp::io {
namespace {

using Bytes = std::vector<std::uint8_t>;

// A .npy file: magic, version, header length, the dict padded to 64 bytes with '\n', the data.
Bytes npy(const std::string& dict, const Bytes& data, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string h = dict;
  while ((prefix + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  Bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(major), 0};
  for (std::size_t i = 0; i < prefix - 8; ++i) b.push_back(static_cast<std::uint8_t>(h.size() >> (8 * i)));
  b.insert(b.end(), h.begin(), h.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

// A reader of `b` (not copied: `b` must outlive it).
NpyReader reader(const Bytes& b) { return NpyReader(memory_source(b.data(), static_cast<std::int64_t>(b.size()), "t.npy")); }

void expect_refused(const Bytes& b, const std::string& want) {
  try {
    (void)reader(b);
    ADD_FAILURE() << "accepted; wanted an error with '" << want << "'";
  } catch (const core::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("t.npy", 0), 0u) << "names the file: " << e.what();
  }
}

std::string temp(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("mddp_npy_" + std::to_string(::getpid()) + "_" + name);
}

void write_file(const std::string& path, const Bytes& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

TEST(Npy, HeadersParse) {
  const Bytes data(6 * 4, 0);
  const NpyReader r = reader(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data));
  EXPECT_EQ(r.header().dtype.name(), "float32");
  EXPECT_EQ(r.header().shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(r.header().count, 6);
  EXPECT_EQ(r.header().header_bytes, 128);  // 10 + a 56-byte dict + padding to 64 bytes
  const NpyReader v2 = reader(npy("{'descr': '|u1', 'fortran_order': False, 'shape': (6,)}", Bytes(6), 2));
  EXPECT_EQ(v2.header().dtype.name(), "uint8");
  EXPECT_EQ(v2.header().major, 2);
  const NpyReader old = reader(npy("{'descr': '<i8', 'fortran_order': True, 'shape': (3L,), }", Bytes(24)));
  EXPECT_EQ(old.header().shape, (std::vector<std::int64_t>{3}));  // 1-D: Fortran order is C order
  const NpyReader scalar = reader(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", Bytes(8)));
  EXPECT_EQ(scalar.header().count, 1);
}

TEST(Npy, MalformedHeadersAreRefused) {
  const Bytes d(8);
  Bytes magic = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", d);
  magic[1] = 'X';
  expect_refused(magic, "not a .npy file");
  Bytes version = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", d);
  version[6] = 9;
  expect_refused(version, "format version 9.0");
  expect_refused(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", d), "structured dtype");
  expect_refused(npy("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", d), "dtype '<c16'");
  expect_refused(npy("{'descr': '<U8', 'fortran_order': False, 'shape': (1,), }", d), "dtype '<U8'");
  expect_refused(npy("{'descr': '<f8', 'shape': (1,), }", d), "lacks 'fortran_order'");
  expect_refused(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'x': 1}", d), "unknown key 'x'");
  expect_refused(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,", d), "malformed .npy header");
  expect_refused(npy("{'descr': '<f8', 'fortran_order': Maybe, 'shape': (1,)}", d), "expected True or False");
  expect_refused(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999, 99999999999)}", d),
                 "more elements than a file can");
  expect_refused(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (-1,)}", d), "expected a dimension");
  expect_refused(npy("{'descr': '<f8', 'fortran_order': True, 'shape': (1, 1)}", d), "fortran_order True");
  expect_refused(Bytes{0x93, 'N'}, "too short");
}

TEST(Npy, DataMustBeExactlyTheHeadersBytes) {
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }";
  expect_refused(npy(dict, Bytes(31)), "truncated: the header (<f8, shape (2, 2)) promises 32 bytes of data, the file holds 31");
  expect_refused(npy(dict, Bytes(33)), "1 extra bytes after the data");
  Bytes header_cut = npy(dict, Bytes(32));
  header_cut.resize(40);
  expect_refused(header_cut, "truncated: the header length says");
}

TEST(Npy, BigEndianElementsAreSwapped) {
  const Bytes data = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0};  // 1.0, -2.0 big-endian
  const Bytes file = npy("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", data);
  NpyReader r = reader(file);  // reads from `file`, which must outlive it
  double v[2];
  r.read(2, v);
  EXPECT_EQ(v[0], 1.0);
  EXPECT_EQ(v[1], -2.0);
}

// A zip archive written by hand: local headers, central directory, end record. `deflate` compresses
// the members (raw deflate, as zip stores it); `zip64` writes 0xFFFFFFFF sizes and a zip64 extra
// field in the central directory, as numpy's savez does.
Bytes zip(const std::vector<std::pair<std::string, Bytes>>& members, bool compress, bool zip64) {
  Bytes out, cd;
  auto put = [](Bytes& b, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  for (const auto& [name, data] : members) {
    Bytes body = data;
    if (compress) {
      z_stream z{};
      deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
      body.assign(deflateBound(&z, data.size()), 0);
      z.next_in = const_cast<Bytes::value_type*>(data.data());
      z.avail_in = static_cast<uInt>(data.size());
      z.next_out = body.data();
      z.avail_out = static_cast<uInt>(body.size());
      deflate(&z, Z_FINISH);
      body.resize(z.total_out);
      deflateEnd(&z);
    }
    const std::uint32_t crc = static_cast<std::uint32_t>(crc32(0, data.data(), static_cast<uInt>(data.size())));
    const std::uint64_t offset = out.size();
    put(out, 0x04034b50, 4), put(out, 20, 2), put(out, 0, 2), put(out, compress ? 8 : 0, 2), put(out, 0, 4);
    put(out, crc, 4), put(out, body.size(), 4), put(out, data.size(), 4), put(out, name.size(), 2), put(out, 0, 2);
    out.insert(out.end(), name.begin(), name.end());
    out.insert(out.end(), body.begin(), body.end());
    put(cd, 0x02014b50, 4), put(cd, 45, 2), put(cd, 45, 2), put(cd, 0, 2), put(cd, compress ? 8 : 0, 2), put(cd, 0, 4);
    put(cd, crc, 4);
    put(cd, zip64 ? 0xFFFFFFFF : body.size(), 4), put(cd, zip64 ? 0xFFFFFFFF : data.size(), 4);
    put(cd, name.size(), 2), put(cd, zip64 ? 28 : 0, 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 4);
    put(cd, zip64 ? 0xFFFFFFFF : offset, 4);
    cd.insert(cd.end(), name.begin(), name.end());
    if (zip64) put(cd, 1, 2), put(cd, 24, 2), put(cd, data.size(), 8), put(cd, body.size(), 8), put(cd, offset, 8);
  }
  const std::uint64_t cd_offset = out.size();
  out.insert(out.end(), cd.begin(), cd.end());
  put(out, 0x06054b50, 4), put(out, 0, 4), put(out, members.size(), 2), put(out, members.size(), 2);
  put(out, cd.size(), 4), put(out, cd_offset, 4), put(out, 0, 2);
  return out;
}

Bytes read_all(ByteSource& s) {
  Bytes b(static_cast<std::size_t>(s.size()));
  s.read(b.data(), s.size());
  return b;
}

TEST(Zip, StoredAndDeflatedMembersReadBack) {
  Bytes big(100000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>((i * 7) % 251);
  const Bytes small = {1, 2, 3};
  for (const bool deflate : {false, true}) {
    for (const bool zip64 : {false, true}) {
      const std::string path = temp("a.zip");
      write_file(path, zip({{"x.npy", big}, {"y.npy", small}}, deflate, zip64));
      const ZipArchive z(path);
      ASSERT_EQ(z.members().size(), 2u);
      EXPECT_EQ(read_all(*z.open(*z.find("x.npy"))), big) << "deflate " << deflate << " zip64 " << zip64;
      EXPECT_EQ(read_all(*z.open(*z.find("y.npy"))), small);
      EXPECT_EQ(z.find("z.npy"), nullptr);
      std::filesystem::remove(path);
    }
  }
}

TEST(Zip, DamageIsRefused) {
  const Bytes data(5000, 42);
  const std::string path = temp("bad.zip");
  for (const bool deflate : {false, true}) {
    Bytes z = zip({{"x.npy", data}}, deflate, false);
    z[30 + 5 + (deflate ? 3 : 100)] ^= 1;  // one bit of the member's bytes
    write_file(path, z);
    const ZipArchive a(path);
    auto s = a.open(*a.find("x.npy"));
    Bytes b(static_cast<std::size_t>(s->size()));
    EXPECT_THROW(s->read(b.data(), s->size()), core::UsageError) << "deflate " << deflate;
  }
  Bytes cut = zip({{"x.npy", data}}, false, false);
  cut.resize(cut.size() - 10);  // the end record cut off
  write_file(path, cut);
  EXPECT_THROW(ZipArchive{path}, core::UsageError);
  write_file(path, Bytes(100, 0));
  EXPECT_THROW(ZipArchive{path}, core::UsageError);
  std::filesystem::remove(path);
}

TEST(NpyImport, Uint8ImagesAndTheirLabels) {
  const std::string x = temp("x.npy"), y = temp("y.npy"), out = temp("out.h5");
  const Bytes pixels = {0, 1, 127, 128, 254, 255};
  write_file(x, npy("{'descr': '|u1', 'fortran_order': False, 'shape': (3, 1, 2), }", pixels));
  write_file(y, npy("{'descr': '<u2', 'fortran_order': False, 'shape': (3,), }", Bytes{2, 0, 0, 0, 1, 0}));
  NpyImportOptions o;
  o.x_path = x;
  o.y_path = y;
  o.output = out;
  const NpyImportResult r = import_npy(o);
  EXPECT_EQ(r.rows, 3);
  EXPECT_EQ(r.in_dim, 2);
  EXPECT_EQ(r.classes, 3);
  EXPECT_EQ(r.row_shape, "1x2");
  const hid_t f = H5Fopen(out.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  float got[6];
  std::int32_t labels[3];
  const hid_t xi = H5Dopen2(f, "/inputs", H5P_DEFAULT), yi = H5Dopen2(f, "/labels", H5P_DEFAULT);
  H5Dread(xi, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got);
  H5Dread(yi, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels);
  H5Dclose(xi), H5Dclose(yi), H5Fclose(f);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got[i], static_cast<float>(pixels[i]) / 255.0f) << i;
  EXPECT_EQ(labels[0], 2);
  EXPECT_EQ(labels[1], 0);
  EXPECT_EQ(labels[2], 1);
  // A label out of --classes: refused before anything is written.
  std::filesystem::remove(out);
  o.classes = 2;
  EXPECT_THROW(import_npy(o), core::UsageError);
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
  for (const auto& p : {x, y}) std::filesystem::remove(p);
}

}  // namespace
}  // namespace microddp::io
