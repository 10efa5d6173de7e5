// byte_source.cpp — the file and memory sources.
#include "io/byte_source.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace microddp::io {

namespace {

class FileSource final : public ByteSource {
 public:
  explicit FileSource(const std::string& path) : ByteSource(path) {
    file_ = std::fopen(path.c_str(), "rb");
    MDDP_USAGE_CHECK(file_ != nullptr, path << ": " << std::strerror(errno));
    struct stat st {};
    MDDP_USAGE_CHECK(::fstat(::fileno(file_), &st) == 0 && S_ISREG(st.st_mode), path << ": not a regular file");
    size_ = static_cast<std::int64_t>(st.st_size);
  }
  ~FileSource() override { std::fclose(file_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  std::int64_t size() const override { return size_; }
  void read(void* dst, std::int64_t n) override {
    MDDP_USAGE_CHECK(n >= 0 && n <= size_ - consumed_, name() << ": truncated: " << n << " more bytes wanted after "
                                                              << consumed_ << ", the file holds " << size_);
    const std::size_t got = std::fread(dst, 1, static_cast<std::size_t>(n), file_);
    MDDP_USAGE_CHECK(got == static_cast<std::size_t>(n),
                     name() << ": read failed after " << consumed_ + static_cast<std::int64_t>(got)
                            << " bytes (the file changed or an I/O error): " << std::strerror(errno));
    consumed_ += n;
  }

 private:
  std::FILE* file_ = nullptr;
  std::int64_t size_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(const std::uint8_t* data, std::int64_t size, std::string name)
      : ByteSource(std::move(name)), data_(data), size_(size) {}
  std::int64_t size() const override { return size_; }
  void read(void* dst, std::int64_t n) override {
    MDDP_USAGE_CHECK(n >= 0 && n <= size_ - consumed_, name() << ": truncated: " << n << " more bytes wanted after "
                                                              << consumed_ << ", it holds " << size_);
    if (n > 0) std::memcpy(dst, data_ + consumed_, static_cast<std::size_t>(n));
    consumed_ += n;
  }

 private:
  const std::uint8_t* data_;
  std::int64_t size_;
};

}  // namespace

std::unique_ptr<ByteSource> open_file_source(const std::string& path) { return std::make_unique<FileSource>(path); }

std::unique_ptr<ByteSource> memory_source(const std::uint8_t* data, std::int64_t size, std::string name) {
  return std::make_unique<MemorySource>(data, size, std::move(name));
}

}  // namespace microddp::io
