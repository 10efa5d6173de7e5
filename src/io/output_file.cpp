// output_file.cpp — the checks of an output path, and its temporary (see output_file.hpp).
#include "io/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "core/memory_limit.hpp"
#include "io/atomic_file.hpp"
#include "io/checkpoint_schema.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"

namespace microddp::io {

namespace {

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// ckpt_<10 digits>.h5: what io/checkpoint_dir lists, so --resume auto would read it.
bool checkpoint_name(const std::string& name) {
  if (name.size() != 18 || !name.starts_with("ckpt_") || !name.ends_with(".h5")) return false;
  for (std::size_t i = 5; i < 15; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return true;
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

}  // namespace

bool is_checkpoint_file(const std::string& path) {
  hdf5_quiet();
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return false;
  Hid file(f);
  if (!has_attr(file, "format")) return false;
  try {
    return read_attr_str(file, "format", path) == kCheckpointFormat;
  } catch (const core::Error&) {
    return false;
  }
}

void check_output_path(const std::string& path, const OutputRules& rules) {
  const std::string& what = rules.what;
  MDDP_USAGE_CHECK(!path.empty(), what << ": an empty file name (give the file to write)");
  MDDP_USAGE_CHECK(path.back() != '/', what << " " << path << ": a directory name (give the file to write)");
  struct stat out {};
  const bool exists = ::stat(path.c_str(), &out) == 0;
  MDDP_USAGE_CHECK(!exists || !S_ISDIR(out.st_mode),
                   what << " " << path << " is a directory (give a file name inside it, e.g. " << path << "/"
                        << "out.h5)");
  const std::string dir = directory_of(path);
  struct stat d {};
  MDDP_USAGE_CHECK(::stat(dir.c_str(), &d) == 0,
                   what << " " << path << ": its directory " << dir << " cannot be used: " << std::strerror(errno));
  MDDP_USAGE_CHECK(S_ISDIR(d.st_mode), what << " " << path << ": " << dir << " is not a directory");
  MDDP_USAGE_CHECK(::access(dir.c_str(), W_OK | X_OK) == 0,
                   what << " " << path << ": cannot write in " << dir << ": " << std::strerror(errno));
  struct stat tmp {};
  const bool tmp_exists = ::stat(temp_path(path).c_str(), &tmp) == 0;
  for (const std::string& input : rules.inputs) {
    struct stat in {};
    if (input.empty() || ::stat(input.c_str(), &in) != 0) continue;
    MDDP_USAGE_CHECK(!(exists && same_file(out, in)), what << " " << path << " is the input " << input
                                                          << ": writing it would destroy what is read (give another "
                                                             "output file)");
    MDDP_USAGE_CHECK(!(tmp_exists && same_file(tmp, in)),
                     what << " " << path << ": its temporary " << temp_path(path) << " is the input " << input
                          << " (give another output file)");
  }
  MDDP_USAGE_CHECK(!(exists && is_checkpoint_file(path)),
                   what << " " << path << " is a checkpoint: it is never replaced by another file (only train's own "
                                          "saves and their retention remove checkpoints); give another output file");
  MDDP_USAGE_CHECK(!checkpoint_name(base_name(path)),
                   what << " " << path << " is named like a checkpoint (ckpt_<step>.h5), which --resume auto would "
                                          "read as one; give another output file name");
}

void check_distinct_outputs(const std::string& a, const std::string& b, const std::string& what) {
  struct stat da {}, db {};
  const bool same = a == b || (::stat(directory_of(a).c_str(), &da) == 0 &&
                               ::stat(directory_of(b).c_str(), &db) == 0 && same_file(da, db) &&
                               base_name(a) == base_name(b));
  MDDP_USAGE_CHECK(!same, what << ": " << a << " and " << b << " are the same file (give two different files)");
}

void check_free_space(const std::string& path, std::int64_t bytes, const std::string& what) {
  struct statvfs fs {};
  if (::statvfs(directory_of(path).c_str(), &fs) != 0) return;
  const double free_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  MDDP_USAGE_CHECK(static_cast<double>(bytes) <= free_bytes,
                   what << " " << path << " would take " << core::format_bytes(static_cast<double>(bytes)) << " but "
                        << directory_of(path) << " has " << core::format_bytes(free_bytes) << " free");
}

OutputFile::OutputFile(const std::string& path, const OutputRules& rules) : path_(path), temp_(temp_path(path)) {
  check_output_path(path, rules);
  const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  MDDP_USAGE_CHECK(fd >= 0, rules.what << " " << path << ": cannot create " << temp_ << ": " << std::strerror(errno));
  ::close(fd);
}

OutputFile::~OutputFile() {
  if (!published_) std::remove(temp_.c_str());
}

void OutputFile::publish() {
  io::publish(temp_, path_);
  published_ = true;
}

}  // namespace microddp::io
