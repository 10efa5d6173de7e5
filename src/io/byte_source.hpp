// byte_source.hpp — a sequence of bytes of known length, read front to back: a plain file, one
// member of a zip archive (io/zip_archive.hpp) or memory (the fuzz target). The NumPy reader
// (io/npy_file.hpp) reads through it, so a .npy file and an array inside a .npz are one code path.
//
// Contract: size() is the total number of bytes the source holds (known before reading: a reader
// checks what a header claims against it before it allocates anything); read() delivers exactly n
// bytes or throws core::UsageError naming the source ("truncated" or the I/O error); consumed()
// counts the bytes delivered so far.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace microddp::io {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::int64_t size() const = 0;
  virtual void read(void* dst, std::int64_t n) = 0;
  std::int64_t consumed() const { return consumed_; }
  const std::string& name() const { return name_; }

 protected:
  explicit ByteSource(std::string name) : name_(std::move(name)) {}
  std::int64_t consumed_ = 0;

 private:
  std::string name_;
};

// A whole file. Throws core::UsageError when it cannot be opened.
std::unique_ptr<ByteSource> open_file_source(const std::string& path);
// `size` bytes at `data` (not copied: they must outlive the source).
std::unique_ptr<ByteSource> memory_source(const std::uint8_t* data, std::int64_t size, std::string name);

}  // namespace microddp::io
