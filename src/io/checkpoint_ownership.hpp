// checkpoint_ownership.hpp — whose are the checkpoints in a directory: the run identity
// (io/run_info.hpp, io::run_identity) of each published checkpoint and of best.h5.
//
// Contract: only files whose root attributes read and verify count (io::read_checkpoint_meta); a
// file that cannot be read is nobody's, and nothing here deletes it. `train` asks before it writes
// into a directory (another run's checkpoints there are refused unless --overwrite), and the save's
// retention asks before it deletes (only this run's).
#pragma once

#include <string>
#include <vector>

namespace microddp::io {

// Whether the checkpoint at `path` reads and belongs to the run with identity `id`.
bool belongs_to_run(const std::string& path, const std::string& id);
// The published checkpoints of `dir` and its best.h5 that read and belong to another run than `id`.
std::vector<std::string> other_runs_checkpoints(const std::string& dir, const std::string& id);

}  // namespace microddp::io
