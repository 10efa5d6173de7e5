// checkpoint_load.hpp — reading a checkpoint (fully verified) and resuming a trainer from one.
//
// read_checkpoint() checks everything the schema promises (io/checkpoint_schema.hpp): it opens,
// format and version, the attribute digest, every dataset present with the right dtype and shape,
// every checksum. check_compatible() then asks whether it fits this run: every `resume` field of
// ddp::train_config_fields() and the data source. resume() does both on rank 0 only (one reader
// instead of N ranks on the file system), then broadcasts the parameters and optimizer state;
// nothing reaches the model unless every check passed. Errors are core::UsageError naming the
// file, the dataset or attribute, the expected and the actual value.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ddp/train_state.hpp"
#include "io/checkpoint_compression.hpp"
#include "io/checkpoint_schema.hpp"
#include "io/run_info.hpp"

namespace microddp::io {

// A checkpoint file, read and fully verified (no trainer needed).
struct CheckpointContents {
  std::string path;
  std::int64_t format_version = 0;
  ddp::TrainConfig config;
  std::string data_source;
  std::int64_t world_size = 0;
  std::string strategy, backend;
  std::int64_t steps_done = 0, data_position = 0, optimizer_steps = 0;
  std::vector<float> params;  // flat, gradient-ready layout (model::FullMLP)
  std::vector<std::pair<std::string, std::vector<float>>> optimizer_state;  // same layout each
  struct Dataset {
    std::string path;
    std::vector<std::int64_t> dims;
    std::uint64_t checksum = 0;
  };
  std::vector<Dataset> datasets;
  CompressionSnapshot compression;  // the /compression group (io/checkpoint_compression.hpp)
  RunInfo run;                      // the run record (format version 2; empty in version 1)
  std::string identity;             // run_identity() of the file
};
// Throws core::UsageError (exit code 2) naming file, dataset/attribute, expected and actual.
CheckpointContents read_checkpoint(const std::string& path);
// Refuses a checkpoint that does not fit this run, naming every field that differs:
// "checkpoint F does not fit this run: width = 16 (this run: 17); nesterov = false (this run: true)".
void check_compatible(const CheckpointContents& c, const ddp::TrainConfig& cfg, const std::string& data_source);

struct ResumeRequest {
  std::string spec;  // "auto" or a checkpoint file
  std::string dir;   // where "auto" looks
  // Fields that may differ from the checkpoint's (FieldRules::changeable ones; --allow-changed).
  std::vector<std::string> allow_changed;
  // Appended to the refusal of a checkpoint that does not fit (what the user can do instead).
  std::string refusal_hint;
};

struct ResumeResult {
  bool loaded = false;
  std::string path;
  std::int64_t steps_done = 0;
  std::vector<std::string> notes;  // why newer candidates were skipped, world-size changes, ...
  RunInfo run;                     // the checkpoint's run record, with its identity as run_id
  std::vector<ConfigDifference> changed;  // the allowed differences this resume accepted
};
// Collective. spec "auto": the newest valid checkpoint in `dir`, falling back past invalid ones
// (unreadable, corrupt: each reason in notes); none at all is not an error (fresh start). Otherwise
// spec is a path that must be valid. Either way, a checkpoint that does not fit the run (a `resume`
// field differs that allow_changed does not name) is refused: an agreed core::UsageError on every
// rank naming every difference, then refusal_hint; nothing is loaded, nothing deleted.
ResumeResult resume(MPI_Comm comm, const ResumeRequest& request, ddp::TrainState& trainer);
// Collective: rank 0's n floats at p to every rank (in chunks MPI's int counts can carry).
void broadcast_floats(MPI_Comm comm, float* p, std::int64_t n);
// The same without changes allowed.
ResumeResult resume(MPI_Comm comm, const std::string& spec, const std::string& dir, ddp::TrainState& trainer);

}  // namespace microddp::io
