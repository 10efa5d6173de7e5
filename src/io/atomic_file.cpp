// atomic_file.cpp — fsync, rename, directory fsync, each failure with errno.
#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace microddp::io {

namespace {
void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  MDDP_CHECK(fd >= 0, "cannot open " << path << " to fsync it: " << std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;  // close() may overwrite it
  ::close(fd);
  MDDP_CHECK(rc == 0, "fsync(" << path << ") failed: " << std::strerror(err));
}
}  // namespace

std::string temp_path(const std::string& path) { return path + ".tmp"; }

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : (slash == 0 ? std::string("/") : path.substr(0, slash));
}

void fsync_file(const std::string& path) { fsync_path(path, false); }
void fsync_directory(const std::string& dir) { fsync_path(dir, true); }

void publish(const std::string& tmp, const std::string& path, const std::function<void(PublishStep)>& after) {
  fsync_file(tmp);
  if (after) after(PublishStep::FileSynced);
  MDDP_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0,
             "cannot rename " << tmp << " to " << path << ": " << std::strerror(errno));
  if (after) after(PublishStep::Renamed);
  fsync_directory(directory_of(path));
  if (after) after(PublishStep::DirectorySynced);
}

}  // namespace microddp::io
