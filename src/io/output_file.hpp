// output_file.hpp — every file a command writes for the user (export's model, make-dataset's data
// sets, evaluate --dump-logits) goes through here, so each refusal is said once and the same way.
//
// Contract:
//   * check_output_path() refuses, as core::UsageError naming the file and the way forward: an
//     empty path; an existing directory; a directory that does not exist or is not one; a path
//     that is one of the command's inputs, or whose temporary (PATH.tmp) is (same device and inode:
//     a second name, a link or "./x" are the same file); and a checkpoint (an existing file whose
//     root attribute `format` is a microddp checkpoint's, or a name --resume auto reads as one,
//     ckpt_<10 digits>.h5), which only train's own saves write. An existing file of any other kind
//     is replaced, as cp replaces it.
//   * OutputFile checks, then creates PATH.tmp in the same directory (a failure there, such as a
//     read-only file system, is a core::UsageError with the system's reason), and removes it again
//     unless publish() (io/atomic_file.hpp: fsync, rename, directory fsync) succeeded: a failure at
//     any point, a full disk included, leaves PATH as it was and no temporary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace microddp::io {

struct OutputRules {
  std::string what;                 // how messages name the output: "export's OUT", "--dump-logits"
  std::vector<std::string> inputs;  // the files the command reads (those that do not exist are skipped)
};

void check_output_path(const std::string& path, const OutputRules& rules);

// Two outputs of one command must be different files (--split's TRAIN and VAL), also when neither
// exists yet: compared by the directory's device and inode and the file name.
void check_distinct_outputs(const std::string& a, const std::string& b, const std::string& what);

// Refuses (core::UsageError) when `bytes` more would not fit the free space of the file system
// that holds `path` (statvfs; unknown free space never refuses).
void check_free_space(const std::string& path, std::int64_t bytes, const std::string& what);

// True when PATH is an existing microddp checkpoint (by content, not by name).
bool is_checkpoint_file(const std::string& path);

class OutputFile {
 public:
  OutputFile(const std::string& path, const OutputRules& rules);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& temp() const { return temp_; }  // write here
  // fsync, rename to path(), directory fsync. Throws core::Error naming the call and errno.
  void publish();

 private:
  std::string path_, temp_;
  bool published_ = false;
};

}  // namespace microddp::io
