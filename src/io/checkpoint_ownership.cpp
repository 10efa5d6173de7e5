// checkpoint_ownership.cpp — identities read from the root attributes only (no tensors).
#include "io/checkpoint_ownership.hpp"

#include <sys/stat.h>

#include "core/error.hpp"
#include "io/checkpoint_dir.hpp"
#include "io/checkpoint_schema.hpp"

namespace microddp::io {

namespace {
// The identity of the checkpoint at `path`, or "" when it does not read.
std::string identity_of(const std::string& path) {
  try {
    return run_identity(read_checkpoint_meta(path));
  } catch (const core::UsageError&) {
    return "";
  }
}
}  // namespace

bool belongs_to_run(const std::string& path, const std::string& id) { return identity_of(path) == id; }

std::vector<std::string> other_runs_checkpoints(const std::string& dir, const std::string& id) {
  std::vector<std::string> files = list_checkpoints(dir);
  struct stat st {};
  const std::string best = best_checkpoint_path(dir);
  if (::stat(best.c_str(), &st) == 0) files.push_back(best);
  std::vector<std::string> other;
  for (const auto& f : files) {
    const std::string who = identity_of(f);
    if (!who.empty() && who != id) other.push_back(f);
  }
  return other;
}

}  // namespace microddp::io
