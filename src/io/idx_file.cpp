// idx_file.cpp — the IDX header and the item stream over zlib's gzread (plain files pass through).
#include "io/idx_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <sys/stat.h>

#include "core/error.hpp"

namespace microddp::io {

namespace {

// Bytes of one element of each type code; 0 for a code that is not IDX.
std::int64_t element_bytes(int code) {
  switch (code) {
    case 0x08:
    case 0x09:
      return 1;
    case 0x0B:
      return 2;
    case 0x0C:
    case 0x0D:
      return 4;
    case 0x0E:
      return 8;
    default:
      return 0;
  }
}

std::uint32_t big_endian32(const unsigned char* b) {
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
}

gzFile as_gz(void* p) { return static_cast<gzFile>(p); }

}  // namespace

std::string idx_magic_text(std::uint32_t magic) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", magic);
  return s;
}

std::string idx_type_name(int code) {
  switch (code) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "unknown";
  }
}

IdxReader::IdxReader(const std::string& path) : path_(path) {
  // gzip's magic decides, not the name: a .gz that is not compressed, or a compressed file without
  // the suffix, reads the same (zlib passes plain data through, gzdirect() tells which it was).
  std::FILE* probe = std::fopen(path.c_str(), "rb");
  MDDP_USAGE_CHECK(probe != nullptr, path << ": cannot open: " << std::strerror(errno));
  std::fclose(probe);
  gz_ = gzopen(path.c_str(), "rb");
  MDDP_USAGE_CHECK(gz_ != nullptr, path << ": cannot open: " << std::strerror(errno));
  // 256 KiB of buffered input instead of zlib's 8 KiB: fewer read() calls on a 47 MB image file.
  gzbuffer(as_gz(gz_), 256 * 1024);
  // A constructor that throws runs no destructor: close the stream here on a bad header.
  try {
    read_header();
  } catch (...) {
    gzclose(as_gz(gz_));
    gz_ = nullptr;
    throw;
  }
}

void IdxReader::read_header() {
  const std::string& path = path_;
  unsigned char head[4] = {0, 0, 0, 0};
  const std::int64_t got = read_bytes(head, 4);
  gzip_ = gzdirect(as_gz(gz_)) == 0;
  const char* form = gzip_ ? " (gzip-compressed)" : "";
  MDDP_USAGE_CHECK(got == 4, path << form << ": truncated: an IDX file starts with a 4-byte magic, the file has " << got
                                  << " bytes");
  magic_ = big_endian32(head);
  MDDP_USAGE_CHECK(head[0] == 0 && head[1] == 0 && element_bytes(head[2]) > 0 && head[3] >= 1 && head[3] <= 8,
                   path << form << ": wrong magic " << idx_magic_text(magic_)
                        << ": not an IDX file (an IDX magic is 0x0000TTDD: type TT = 08 unsigned byte .. 0e float64, "
                           "DD = 1..8 dimensions; MNIST images are 0x00000803, labels 0x00000801)");
  const int d = head[3];
  std::vector<unsigned char> sizes(static_cast<std::size_t>(4 * d));
  const std::int64_t got_sizes = read_bytes(sizes.data(), 4 * d);
  MDDP_USAGE_CHECK(got_sizes == 4 * d, path << form << ": truncated: the header of " << d << " dimensions needs "
                                            << 4 + 4 * d << " bytes, the file has " << 4 + got_sizes);
  header_bytes_ = 4 + 4 * d;
  item_bytes_ = element_bytes(type_code());
  // Reading the header (at most 36 bytes) is all this reader does before the sizes are known: every
  // buffer a caller sizes from them is checked against the data first (plain file, below) or grown
  // with the data as it arrives (gzip: IdxReader::read in bounded pieces, io/idx_import.cpp).
  for (int i = 0; i < d; ++i) {
    const std::int64_t size = big_endian32(sizes.data() + 4 * i);
    MDDP_USAGE_CHECK(size >= 1,
                     path << form << ": dimension " << i << " has size 0 (magic " << idx_magic_text(magic_) << ")");
    dims_.push_back(size);
    if (i > 0) {
      item_bytes_ *= size;  // at most 2^31 after each factor (checked), so the next product fits
      MDDP_USAGE_CHECK(item_bytes_ <= (std::int64_t{1} << 31),
                       path << form << ": one item of " << d - 1 << " dimensions is larger than 2 GiB");
    }
  }
  // count < 2^32 and item_bytes <= 2^31: the product is below 2^63 and fits.
  data_bytes_ = count() * item_bytes_;
  if (!gzip_) {
    // A plain file's size is known now: a header that promises more (or less) than the file holds is
    // refused before anyone allocates for it.
    struct stat st {};
    MDDP_USAGE_CHECK(::stat(path.c_str(), &st) == 0, path << ": cannot stat: " << std::strerror(errno));
    const std::int64_t have = static_cast<std::int64_t>(st.st_size) - header_bytes_;
    if (have < data_bytes_) core::throw_usage_error(short_message(have));
    if (have > data_bytes_) core::throw_usage_error(extra_message(have - data_bytes_));
  }
}

IdxReader::~IdxReader() {
  if (gz_ != nullptr) gzclose(as_gz(gz_));
}

std::int64_t IdxReader::read_bytes(void* out, std::int64_t bytes) {
  auto* p = static_cast<unsigned char*>(out);
  std::int64_t done = 0;
  while (done < bytes) {
    // gzread takes an unsigned count and returns an int: at most 1 GiB per call.
    const auto chunk = static_cast<unsigned>(std::min<std::int64_t>(bytes - done, std::int64_t{1} << 30));
    const int n = gzread(as_gz(gz_), p + done, chunk);
    if (n < 0) {
      int code = Z_OK;
      const char* msg = gzerror(as_gz(gz_), &code);
      // Z_BUF_ERROR: the compressed stream stops in the middle: a truncated file, which the caller
      // reports with the byte counts.
      if (code == Z_BUF_ERROR) break;
      core::throw_usage_error(path_ + ": corrupt gzip data (zlib: " + (msg != nullptr ? msg : "?") + ")");
    }
    if (n == 0) break;
    done += n;
  }
  return done;
}

std::string IdxReader::short_message(std::int64_t have) const {
  std::ostringstream os;
  os << path_ << (gzip_ ? " (gzip-compressed)" : "") << ": truncated: the header (magic " << idx_magic_text(magic_)
     << ", dimensions";
  for (auto dim : dims_) os << " " << dim;
  os << ") promises " << data_bytes_ << " bytes of items after its " << header_bytes_ << " bytes, the "
     << (gzip_ ? "decompressed data ends" : "file ends") << " after " << have;
  int code = Z_OK;
  const char* msg = gzerror(as_gz(gz_), &code);
  if (gzip_ && code != Z_OK && msg != nullptr) os << " (zlib: " << msg << ")";
  return os.str();
}

std::string IdxReader::extra_message(std::int64_t extra) const {
  std::ostringstream os;
  os << path_ << (gzip_ ? " (gzip-compressed)" : "") << ": " << extra << " extra bytes after the last of the "
     << count() << " items the header (magic " << idx_magic_text(magic_) << ") describes";
  return os.str();
}

void IdxReader::fail_short(std::int64_t got_bytes) {
  core::throw_usage_error(short_message(items_read_ * item_bytes_ + got_bytes));
}

void IdxReader::read(std::int64_t n, void* out) {
  MDDP_CHECK(n >= 0 && items_read_ + n <= count() && bytes_into_item_ == 0,
             path_ << ": reading items [" << items_read_ << ", " << items_read_ + n << ") of " << count());
  const std::int64_t bytes = n * item_bytes_;
  const std::int64_t got = read_bytes(out, bytes);
  if (got < bytes) fail_short(got);
  items_read_ += n;
}

void IdxReader::read_item_bytes(std::int64_t bytes, void* out) {
  const std::int64_t left = (count() - items_read_) * item_bytes_ - bytes_into_item_;
  MDDP_CHECK(bytes >= 0 && bytes <= left, path_ << ": reading " << bytes << " bytes, " << left << " left of the items");
  const std::int64_t got = read_bytes(out, bytes);
  if (got < bytes) fail_short(bytes_into_item_ + got);
  const std::int64_t at = bytes_into_item_ + bytes;
  items_read_ += at / item_bytes_;
  bytes_into_item_ = at % item_bytes_;
}

void IdxReader::expect_end() {
  MDDP_CHECK(items_read_ == count() && bytes_into_item_ == 0, path_ << ": expect_end after " << items_read_ << " of " << count() << " items");
  unsigned char extra[4096];
  std::int64_t more = 0;
  for (std::int64_t n; (n = read_bytes(extra, sizeof extra)) > 0;) more += n;
  if (more > 0) core::throw_usage_error(extra_message(more));
}

}  // namespace microddp::io
