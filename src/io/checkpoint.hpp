// checkpoint.hpp — HDF5 checkpoints: schema, crash-safe parallel save, verified load, resume.
//
// Schema (version kCheckpointFormatVersion; docs/checkpoint_format.md is the full reference):
//   /                         attributes: format, format_version, steps_done, data_position, the
//                             whole TrainConfig, world_size/strategy/backend at save time, RNG
//                             description, data source, meta_fnv1a64 (digest of all of them)
//   /model/layer_NN/weight    float32 (out, in) row-major      attribute fnv1a64 (of the bytes)
//   /model/layer_NN/bias      float32 (out,)                   attribute fnv1a64
//   /optimizer                attributes: name, step_count, state_buffers ("exp_avg,exp_avg_sq")
//   /optimizer/<buf>/layer_NN/{weight,bias}   same shapes as the parameters, fnv1a64 each
// Everything is world-size independent (parameters and optimizer state are replicated in DDP).
//
// Save protocol (collective over `comm`, between steps, when the communicator is idle):
//   1. every rank creates <dir>/ckpt_<step>.h5.tmp with the MPI-IO driver and writes its disjoint
//      row slice of every dataset collectively (or rank 0 writes all, WriterMode::Rank0);
//   2. H5Fflush + H5Fclose; rank 0 fsyncs the file, renames it to ckpt_<step>.h5 and fsyncs the
//      directory (the published name only ever points at a complete file);
//   3. rank 0 reads the new checkpoint back and verifies every checksum, and only then deletes
//      checkpoints beyond the newest `keep` and stale *.tmp files — so the only valid checkpoint is
//      never deleted.
// Fault injection: MICRODDP_FAULT_KILL_AT=<point> SIGKILLs rank MICRODDP_FAULT_KILL_RANK (default
// 0) at that point of the MICRODDP_FAULT_KILL_SAVE-th save of the process (default 1); the points
// are fault_points(), in protocol order.
//
// Load: rank 0 reads and verifies the whole file (shapes, dtypes, version, per-dataset checksums,
// attribute digest, compatibility with this run) into staging buffers and broadcasts; nothing
// reaches the model unless every check passed. Errors are core::UsageError naming the file, the
// dataset or attribute, the expected and the actual value.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ddp/trainer.hpp"

namespace microddp::io {

inline constexpr std::int64_t kCheckpointFormatVersion = 1;
inline constexpr const char* kCheckpointFormat = "microddp-checkpoint";

enum class WriterMode { Parallel, Rank0 };

struct SaveOptions {
  std::string dir;
  int keep = 3;                       // newest checkpoints kept; 0 = keep all
  WriterMode writer = WriterMode::Parallel;  // `train` defaults to Rank0 (measured, see the docs)
  std::string backend;                // communicator name, recorded
  bool verify = true;                 // read back before deleting older checkpoints
};

struct SaveResult {
  std::string path;
  std::int64_t bytes = 0;    // file size
  double write_s = 0;        // create + write + flush + close
  double publish_s = 0;      // fsync + rename + directory fsync
  double verify_s = 0;       // read-back verification (rank 0)
  std::vector<std::string> deleted;
};

// The named kill points of the save protocol, in order.
const std::vector<std::string>& fault_points();

std::string checkpoint_path(const std::string& dir, std::int64_t step);
// Published checkpoints (ckpt_<10 digits>.h5) in `dir`, newest (highest step) first; temporary and
// foreign files are ignored. A missing directory has none.
std::vector<std::string> list_checkpoints(const std::string& dir);

// Collective over `comm` (all ranks of the trainer). Throws core::Error on I/O failure on any rank.
SaveResult save_checkpoint(MPI_Comm comm, const ddp::Trainer& trainer, const SaveOptions& opts);

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
};
// Throws core::UsageError (exit code 2) naming file, dataset/attribute, expected and actual.
CheckpointContents read_checkpoint(const std::string& path);
// Refuses a checkpoint that does not fit this run (model shape, optimizer, seed, batch, data).
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
ResumeResult resume(MPI_Comm comm, const std::string& spec, const std::string& dir, ddp::Trainer& trainer);

}  // namespace microddp::io
