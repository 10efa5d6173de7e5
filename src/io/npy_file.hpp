// npy_file.hpp — NumPy's .npy array format (numpy.lib.format, versions 1.0, 2.0 and 3.0), read
// with every header field checked, from any io::ByteSource (a file, a member of a .npz).
//
// The format: the magic "\x93NUMPY", a major and a minor version byte, the header length (2 bytes
// little-endian in version 1, 4 bytes in 2 and 3), then the header: a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 28, 28), }
// padded with spaces and ended by '\n'; then the elements, C order, no padding.
//
// What this reader accepts:
//   descr         a plain numeric type: f4 f8 (float32, float64), i1 i2 i4 i8, u1 u2 u4 u8, b1
//                 (bool), byte order '<', '>', '|' or '=' (big-endian elements are swapped);
//                 anything else (complex, strings, objects, dates, structured records) is refused
//   fortran_order False (or True for a 1-D array, whose element order is the same)
//   shape         a tuple of integers >= 0 whose element count and byte count fit in int64
//   header        at most kMaxNpyHeaderBytes (numpy itself refuses more than 10 000 by default)
// and the data must be exactly count x itemsize bytes: fewer is "truncated", more is "extra bytes"
// (both checked against ByteSource::size() before anything is allocated). Every failure is a
// core::UsageError naming the source and what was found (exit 2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/byte_source.hpp"

namespace microddp::io {

inline constexpr std::int64_t kMaxNpyHeaderBytes = 65536;

struct NpyDtype {
  char kind = 'f';  // 'f' float, 'i' signed, 'u' unsigned, 'b' bool
  int bytes = 4;
  bool big_endian = false;
  std::string descr;  // as written, for messages: "<f4"
  // "float32", "uint8", "bool", ...
  std::string name() const;
};

struct NpyHeader {
  int major = 1, minor = 0;
  NpyDtype dtype;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  std::int64_t header_bytes = 0;  // magic, versions, length and dict: where the data starts
  std::int64_t count = 0;         // elements (the product of shape; 1 for a 0-d array)
  std::int64_t data_bytes = 0;    // count x itemsize
  // "(60000, 28, 28)"
  std::string shape_text() const;
};

// The dict of a header (the text after the length field), checked as above. `what` names the
// source in messages.
NpyHeader parse_npy_dict(std::string_view dict, const std::string& what);

class NpyReader {
 public:
  // Reads and checks the header; the data size is checked against the source's size.
  explicit NpyReader(std::unique_ptr<ByteSource> source);

  const NpyHeader& header() const { return header_; }
  const std::string& name() const { return source_->name(); }
  // The next n elements, in host byte order (dtype().bytes each), into dst.
  void read(std::int64_t n, void* dst);
  std::int64_t elements_read() const { return read_; }

 private:
  std::unique_ptr<ByteSource> source_;
  NpyHeader header_;
  std::int64_t read_ = 0;
};

}  // namespace microddp::io
