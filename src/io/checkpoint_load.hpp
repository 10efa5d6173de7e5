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
};
// Throws core::UsageError (exit code 2) naming file, dataset/attribute, expected and actual.
CheckpointContents read_checkpoint(const std::string& path);
// Refuses a checkpoint that does not fit this run, naming every field that differs:
// "checkpoint F does not fit this run: width = 16 (this run: 17); nesterov = false (this run: true)".
void check_compatible(const CheckpointContents& c, const ddp::TrainConfig& cfg, const std::string& data_source);

struct ResumeResult {
  bool loaded = false;
  std::string path;
  std::int64_t steps_done = 0;
  std::vector<std::string> notes;  // why newer candidates were skipped, world-size changes, ...
};
// Collective. spec "auto": the newest valid compatible checkpoint in `dir`, falling back past
// invalid ones (each reason in notes); none at all is not an error (fresh start). Otherwise spec
// is a path that must be valid (throws an agreed UsageError on every rank otherwise).
ResumeResult resume(MPI_Comm comm, const std::string& spec, const std::string& dir, ddp::TrainState& trainer);

}  // namespace microddp::io
