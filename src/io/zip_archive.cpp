// zip_archive.cpp — the central directory (with zip64), stored and deflated members.
#include "io/zip_archive.hpp"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace microddp::io {

namespace {

constexpr std::uint32_t kEocdSig = 0x06054b50, kZip64LocatorSig = 0x07064b50, kZip64EocdSig = 0x06064b50,
                        kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;
constexpr std::int64_t kMaxMembers = 1 << 20;  // far beyond any .npz: bounds what a crafted directory allocates

std::uint64_t read_le(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// An open file read at explicit offsets.
class ZipFile {
 public:
  explicit ZipFile(const std::string& path) : path_(path) {
    f_ = std::fopen(path.c_str(), "rb");
    MDDP_USAGE_CHECK(f_ != nullptr, path << ": " << std::strerror(errno));
    struct stat st {};
    MDDP_USAGE_CHECK(::fstat(::fileno(f_), &st) == 0 && S_ISREG(st.st_mode), path << ": not a regular file");
    size_ = static_cast<std::int64_t>(st.st_size);
  }
  ~ZipFile() { std::fclose(f_); }
  ZipFile(const ZipFile&) = delete;
  ZipFile& operator=(const ZipFile&) = delete;
  std::int64_t size() const { return size_; }
  void read_at(std::int64_t off, void* dst, std::int64_t n) const {
    MDDP_USAGE_CHECK(off >= 0 && n >= 0 && off <= size_ - n,
                     path_ << ": truncated zip archive (" << n << " bytes at offset " << off << " of " << size_ << ")");
    MDDP_USAGE_CHECK(::fseeko(f_, off, SEEK_SET) == 0 && std::fread(dst, 1, static_cast<std::size_t>(n), f_) ==
                                                             static_cast<std::size_t>(n),
                     path_ << ": read failed at offset " << off << ": " << std::strerror(errno));
  }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  std::int64_t size_ = 0;
};

// One member's uncompressed bytes: stored ones copied, deflated ones inflated; the CRC-32 checked
// when the last byte has been read.
class MemberSource final : public ByteSource {
 public:
  MemberSource(const std::string& archive, const ZipArchive::Member& m, std::int64_t data_offset)
      : ByteSource(archive + ":" + m.name), file_(archive), m_(m), offset_(data_offset) {
    if (m_.method == 8) {
      std::memset(&z_, 0, sizeof z_);
      MDDP_CHECK(inflateInit2(&z_, -15) == Z_OK, "zlib inflateInit2 failed");  // raw deflate, as zip stores it
      inflating_ = true;
    }
  }
  ~MemberSource() override {
    if (inflating_) inflateEnd(&z_);
  }
  MemberSource(const MemberSource&) = delete;
  MemberSource& operator=(const MemberSource&) = delete;

  std::int64_t size() const override { return m_.size; }
  void read(void* dst, std::int64_t n) override {
    MDDP_USAGE_CHECK(n >= 0 && n <= m_.size - consumed_, name() << ": truncated: " << n << " more bytes wanted after "
                                                                << consumed_ << ", the member holds " << m_.size);
    auto* out = static_cast<unsigned char*>(dst);
    if (m_.method == 0) {
      file_.read_at(offset_ + consumed_, out, n);
    } else {
      inflate_into(out, n);
    }
    crc_ = crc32_z(crc_, out, static_cast<z_size_t>(n));
    consumed_ += n;
    if (consumed_ == m_.size) {
      MDDP_USAGE_CHECK(crc_ == m_.crc32, name() << ": CRC-32 mismatch (the archive says 0x" << std::hex << m_.crc32
                                                << ", the data gives 0x" << crc_ << std::dec << "): corrupt archive");
    }
  }

 private:
  void inflate_into(unsigned char* out, std::int64_t n) {
    std::int64_t done = 0;
    while (done < n) {
      if (z_.avail_in == 0 && in_read_ < m_.compressed) {
        const std::int64_t k = std::min<std::int64_t>(static_cast<std::int64_t>(sizeof in_), m_.compressed - in_read_);
        file_.read_at(offset_ + in_read_, in_, k);
        in_read_ += k;
        z_.next_in = in_;
        z_.avail_in = static_cast<uInt>(k);
      }
      const std::int64_t want = std::min<std::int64_t>(n - done, 1 << 30);
      z_.next_out = out + done;
      z_.avail_out = static_cast<uInt>(want);
      const int rc = inflate(&z_, Z_NO_FLUSH);
      const std::int64_t got = want - static_cast<std::int64_t>(z_.avail_out);
      done += got;
      MDDP_USAGE_CHECK(rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR,
                       name() << ": corrupt deflate data (zlib: " << (z_.msg != nullptr ? z_.msg : "error")
                              << ")");
      if (got == 0) {
        const bool input_gone = z_.avail_in == 0 && in_read_ == m_.compressed;
        MDDP_USAGE_CHECK(rc != Z_STREAM_END && !input_gone,
                         name() << ": truncated: the deflate data ends after " << consumed_ + done
                                << " bytes, the directory promises " << m_.size);
        MDDP_USAGE_CHECK(rc != Z_BUF_ERROR, name() << ": corrupt deflate data (no progress)");
      }
    }
  }

  ZipFile file_;
  ZipArchive::Member m_;
  std::int64_t offset_;
  bool inflating_ = false;
  z_stream z_{};
  unsigned char in_[1 << 16];
  std::int64_t in_read_ = 0;
  uLong crc_ = crc32(0L, Z_NULL, 0);
};

}  // namespace

ZipArchive::ZipArchive(const std::string& path) : path_(path) {
  ZipFile f(path);
  file_size_ = f.size();
  MDDP_USAGE_CHECK(file_size_ >= 22, path << ": " << file_size_ << " bytes: not a zip archive (.npz)");
  // The end-of-central-directory record: the last 22 bytes plus at most a 64 KiB comment.
  const std::int64_t tail = std::min<std::int64_t>(file_size_, 22 + 65535);
  std::vector<unsigned char> t(static_cast<std::size_t>(tail));
  f.read_at(file_size_ - tail, t.data(), tail);
  std::int64_t eocd = -1;
  for (std::int64_t i = tail - 22; i >= 0; --i) {
    if (read_le(&t[static_cast<std::size_t>(i)], 4) == kEocdSig) {
      eocd = i;
      break;
    }
  }
  MDDP_USAGE_CHECK(eocd >= 0, path << ": not a zip archive (no end-of-central-directory record; np.savez writes one)");
  const unsigned char* e = &t[static_cast<std::size_t>(eocd)];
  MDDP_USAGE_CHECK(read_le(e + 4, 2) == 0 && read_le(e + 6, 2) == 0, path << ": a multi-disk zip archive is not supported");
  std::uint64_t entries = read_le(e + 10, 2), cd_size = read_le(e + 12, 4), cd_offset = read_le(e + 16, 4);
  if (entries == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    // zip64: a locator right before the record points at the zip64 end-of-central-directory.
    const std::int64_t loc = file_size_ - tail + eocd - 20;
    unsigned char l[20], z[56];
    f.read_at(loc, l, 20);
    MDDP_USAGE_CHECK(read_le(l, 4) == kZip64LocatorSig, path << ": zip64 fields without a zip64 locator: corrupt archive");
    const std::uint64_t z_off = read_le(l + 8, 8);
    MDDP_USAGE_CHECK(z_off <= static_cast<std::uint64_t>(file_size_), path << ": zip64 record offset beyond the file");
    f.read_at(static_cast<std::int64_t>(z_off), z, 56);
    MDDP_USAGE_CHECK(read_le(z, 4) == kZip64EocdSig, path << ": no zip64 end-of-central-directory record: corrupt archive");
    entries = read_le(z + 32, 8);
    cd_size = read_le(z + 40, 8);
    cd_offset = read_le(z + 48, 8);
  }
  MDDP_USAGE_CHECK(cd_offset <= static_cast<std::uint64_t>(file_size_) &&
                       cd_size <= static_cast<std::uint64_t>(file_size_) - cd_offset && entries <= kMaxMembers &&
                       entries * 46 <= cd_size,
                   path << ": central directory (" << entries << " members, " << cd_size << " bytes at " << cd_offset
                        << ") does not fit the " << file_size_ << "-byte file: corrupt archive");
  std::vector<unsigned char> cd(static_cast<std::size_t>(cd_size));
  f.read_at(static_cast<std::int64_t>(cd_offset), cd.data(), static_cast<std::int64_t>(cd_size));
  std::size_t p = 0;
  for (std::uint64_t k = 0; k < entries; ++k) {
    MDDP_USAGE_CHECK(p + 46 <= cd.size() && read_le(&cd[p], 4) == kCentralSig,
                     path << ": central directory entry " << k << " is damaged");
    const unsigned char* c = &cd[p];
    Member m;
    const std::uint64_t flags = read_le(c + 8, 2);
    m.method = static_cast<std::uint16_t>(read_le(c + 10, 2));
    m.crc32 = static_cast<std::uint32_t>(read_le(c + 16, 4));
    std::uint64_t csize = read_le(c + 20, 4), usize = read_le(c + 24, 4), off = read_le(c + 42, 4);
    const std::size_t name_len = read_le(c + 28, 2), extra_len = read_le(c + 30, 2), comment_len = read_le(c + 32, 2);
    MDDP_USAGE_CHECK(p + 46 + name_len + extra_len + comment_len <= cd.size(),
                     path << ": central directory entry " << k << " runs past the directory");
    m.name.assign(reinterpret_cast<const char*>(c + 46), name_len);
    // zip64 extra field: the 64-bit values of the fields that hold 0xFFFFFFFF, in this order.
    for (std::size_t x = 0; x + 4 <= extra_len;) {
      const unsigned char* h = c + 46 + name_len + x;
      const std::size_t id = read_le(h, 2), len = read_le(h + 2, 2);
      if (x + 4 + len > extra_len) break;
      if (id == 0x0001) {
        std::size_t q = 0;
        for (std::uint64_t* v : {&usize, &csize, &off}) {
          if (*v == 0xFFFFFFFF) {
            MDDP_USAGE_CHECK(q + 8 <= len, path << ": member " << m.name << ": short zip64 extra field");
            *v = read_le(h + 4 + q, 8);
            q += 8;
          }
        }
      }
      x += 4 + len;
    }
    MDDP_USAGE_CHECK((flags & 1) == 0, path << ": member " << m.name << " is encrypted");
    MDDP_USAGE_CHECK(m.method == 0 || m.method == 8, path << ": member " << m.name << " uses compression method "
                                                          << m.method << " (only stored and deflate are read)");
    MDDP_USAGE_CHECK(csize <= static_cast<std::uint64_t>(file_size_) && off <= static_cast<std::uint64_t>(file_size_) &&
                         usize <= (std::uint64_t{1} << 62) && (m.method != 0 || csize == usize),
                     path << ": member " << m.name << ": sizes " << csize << " / " << usize << " at offset " << off
                          << " do not fit the archive");
    m.compressed = static_cast<std::int64_t>(csize);
    m.size = static_cast<std::int64_t>(usize);
    m.local_offset = static_cast<std::int64_t>(off);
    members_.push_back(std::move(m));
    p += 46 + name_len + extra_len + comment_len;
  }
}

const ZipArchive::Member* ZipArchive::find(const std::string& name) const {
  for (const auto& m : members_) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::unique_ptr<ByteSource> ZipArchive::open(const Member& m) const {
  ZipFile f(path_);
  unsigned char h[30];
  f.read_at(m.local_offset, h, 30);
  MDDP_USAGE_CHECK(read_le(h, 4) == kLocalSig, path_ << ": member " << m.name << ": no local header at offset "
                                                << m.local_offset << ": corrupt archive");
  const std::int64_t data = m.local_offset + 30 + static_cast<std::int64_t>(read_le(h + 26, 2) + read_le(h + 28, 2));
  MDDP_USAGE_CHECK(data <= f.size() - m.compressed, path_ << ": member " << m.name << ": its " << m.compressed
                                                          << " bytes run past the end of the archive (truncated?)");
  return std::make_unique<MemberSource>(path_, m, data);
}

}  // namespace microddp::io
