// zip_archive.hpp — the members of a zip archive, as NumPy's .npz files are (np.savez: stored,
// np.savez_compressed: deflated; both write zip64 records), each opened as an io::ByteSource.
//
// What is read: the end-of-central-directory record (and its zip64 form), the central directory
// (names, methods, sizes, CRC-32, local-header offsets, zip64 extra fields), and each member's local
// header to find where its data starts. Methods 0 (stored) and 8 (deflate, zlib's raw inflate);
// encrypted members, multi-disk archives and other methods are refused. A member's bytes are checked
// against the sizes the directory gives and, once read to its end, against its CRC-32. Every
// failure is a core::UsageError naming the archive (exit 2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/byte_source.hpp"

namespace microddp::io {

class ZipArchive {
 public:
  explicit ZipArchive(const std::string& path);

  struct Member {
    std::string name;
    std::uint16_t method = 0;
    std::uint32_t crc32 = 0;
    std::int64_t compressed = 0, size = 0, local_offset = 0;
  };
  const std::vector<Member>& members() const { return members_; }
  const Member* find(const std::string& name) const;
  // The member's uncompressed bytes, named "ARCHIVE:NAME" in messages.
  std::unique_ptr<ByteSource> open(const Member& m) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::int64_t file_size_ = 0;
  std::vector<Member> members_;
};

}  // namespace microddp::io
