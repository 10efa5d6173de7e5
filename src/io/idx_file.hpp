// idx_file.hpp — reading IDX files (the format of MNIST and Fashion-MNIST), plain or gzip-compressed.
//
// The format (LeCun et al.'s MNIST page): a 4-byte magic — two zero bytes, a type code (0x08 =
// unsigned byte, 0x09 signed byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64) and the
// number of dimensions d — then d sizes as big-endian uint32, then the items, row-major, first
// dimension slowest. MNIST's images are 0x00000803 (count, rows, columns) and its labels
// 0x00000801 (count). A gzip file (the way the data sets are distributed, e.g. Debian's
// dataset-fashion-mnist) is recognised by its first two bytes, not by its name, and decompressed
// on the fly by zlib, which reads a plain file unchanged.
//
// IdxReader streams: the header is read and checked when the file opens, the items in blocks as
// the caller asks, so a large file is never held in memory. Files are untrusted input: every
// failure is core::UsageError naming the file and what is wrong (not IDX, truncated with how many
// bytes were expected and found, corrupt compressed data, extra bytes after the last item).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace microddp::io {

inline constexpr int kIdxUnsignedByte = 0x08;

// A magic number as messages write it: "0x00000803".
std::string idx_magic_text(std::uint32_t magic);

// "unsigned byte", "float32", ... for a type code; "unknown" otherwise.
std::string idx_type_name(int type_code);

class IdxReader {
 public:
  // Opens PATH and reads the header: the first two bytes must be zero (else "not an IDX file"), the
  // type code one of the six above, 1 <= d <= 8 dimensions, each size >= 1, and one item (every
  // dimension but the first) at most 2^31 bytes. A plain file must hold exactly the items the header
  // promises (checked here, from the file's size: "truncated" or "extra bytes" before any item is
  // read); a gzip stream's length is known only at its end, so read() and expect_end() check it.
  explicit IdxReader(const std::string& path);
  ~IdxReader();
  IdxReader(const IdxReader&) = delete;
  IdxReader& operator=(const IdxReader&) = delete;

  const std::string& path() const { return path_; }
  bool gzip() const { return gzip_; }
  std::uint32_t magic() const { return magic_; }
  int type_code() const { return static_cast<int>((magic_ >> 8) & 0xFF); }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::int64_t count() const { return dims_[0]; }  // items: the first dimension
  std::int64_t item_bytes() const { return item_bytes_; }
  std::int64_t items_read() const { return items_read_; }

  // Reads the next n items (n * item_bytes() bytes) into out. Throws core::UsageError when the file
  // ends first ("truncated: ... expected E bytes of items after the header, it ends after F") or
  // the compressed data is corrupt, and core::Error for n beyond count() (a caller's bug).
  void read(std::int64_t n, void* out);
  // Reads the next `bytes` bytes of the items, which may end inside an item (a piece of a large
  // one); the same errors as read(). read() and this mix only at item boundaries.
  void read_item_bytes(std::int64_t bytes, void* out);
  // Bytes of all items: count() * item_bytes() (below 2^63). For a plain file, the constructor has
  // checked that the file holds exactly these after the header.
  std::int64_t data_bytes() const { return data_bytes_; }
  // After the last item: the file must end here; extra bytes are refused (a concatenation, or a
  // header that does not describe the file).
  void expect_end();

 private:
  [[noreturn]] void fail_short(std::int64_t got_bytes);    // got_bytes of the current read arrived
  std::string short_message(std::int64_t have) const;      // "truncated: ..." when `have` item bytes exist
  std::string extra_message(std::int64_t extra) const;     // "N extra bytes after the last of the items"
  std::int64_t read_bytes(void* out, std::int64_t bytes);  // up to `bytes`; fewer only at the end

  void read_header();  // the magic and the dimensions (the constructor's second half)

  std::string path_;
  void* gz_ = nullptr;  // gzFile
  bool gzip_ = false;
  std::uint32_t magic_ = 0;
  std::vector<std::int64_t> dims_;
  std::int64_t item_bytes_ = 0;
  std::int64_t header_bytes_ = 0;
  std::int64_t items_read_ = 0;
  std::int64_t bytes_into_item_ = 0;  // read_item_bytes(): bytes of the next item already read
  std::int64_t data_bytes_ = 0;
};

}  // namespace microddp::io
