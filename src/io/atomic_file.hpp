// atomic_file.hpp — publishing a file so that its final name only ever names a complete file.
//
// The writer writes PATH.tmp (temp_path: same directory, so the same file system), closes it, then
// publish(): fsync the file (its data is on the disk), rename it to PATH (atomic on POSIX: readers
// see the old PATH or the new one, never a mix), fsync the directory (the rename itself is on the
// disk). A crash at any moment leaves either no PATH, the previous PATH, or the complete new PATH,
// plus at most a stale PATH.tmp that the next writer removes. Checkpoints (io/checkpoint_save) and
// `make-dataset` (io/hdf5_dataset) both publish this way.
//
// Errors are core::Error naming the path, the call and errno's text.
#pragma once

#include <functional>
#include <string>

namespace microddp::io {

// PATH.tmp
std::string temp_path(const std::string& path);
// The directory holding `path`: "." for a bare name, "/" for a file in the root.
std::string directory_of(const std::string& path);

void fsync_file(const std::string& path);
void fsync_directory(const std::string& dir);

// The steps of publish(), in order. A caller may stop between them (the checkpoint's fault points).
enum class PublishStep { FileSynced, Renamed, DirectorySynced };

// fsync(tmp), rename(tmp, path), fsync(directory_of(path)); `after` (if set) runs after each step.
void publish(const std::string& tmp, const std::string& path, const std::function<void(PublishStep)>& after = {});

}  // namespace microddp::io
