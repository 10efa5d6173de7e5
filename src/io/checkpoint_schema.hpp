// checkpoint_schema.hpp — what a checkpoint file holds (format version kCheckpointFormatVersion;
// docs/checkpoint_format.md is the full reference), shared by the save and the load:
//
//   /                         root attributes: format, format_version, steps_done, data_position,
//                             world_size, strategy, backend (the save's), data_source, rng, then every
//                             `stored` field of ddp::train_config_fields() in table order (those of
//                             the file's version: FieldRules::since_format), from version 2 on the run
//                             record (io/run_info.hpp: run_id, plan_history, best_*, evals_since_best,
//                             stopped_early), and meta_fnv1a64, the digest of all of them in that order
//   /model/layer_NN/weight    float32 (out, in) row-major      attribute fnv1a64 (of the bytes)
//   /model/layer_NN/bias      float32 (out,)                   attribute fnv1a64
//   /optimizer                attributes: name, step_count, state_buffers ("exp_avg,exp_avg_sq")
//   /optimizer/<buf>/layer_NN/{weight,bias}   same shapes as the parameters, fnv1a64 each
//
// Versions 1 and 2 are read (a version-1 file: the newer fields at their defaults, no run record);
// the save writes version 2. Everything is world-size independent (parameters and optimizer state are replicated in DDP). The
// tensor layout comes from model::param_layout, so reading and inspecting need no model.
// Readers treat the file as untrusted: every failure is core::UsageError naming the file and the
// attribute, with the expected and the actual value.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ddp/train_config.hpp"
#include "io/run_info.hpp"

namespace microddp::io {

inline constexpr std::int64_t kCheckpointFormatVersion = 2;  // what the save writes
inline constexpr std::int64_t kOldestCheckpointFormatVersion = 1;  // the oldest the load reads
inline constexpr const char* kCheckpointFormat = "microddp-checkpoint";

// One tensor of the checkpoint: its dataset path relative to /model (or /optimizer/<buffer>),
// "layer_03/weight", and its place in the flat buffers.
struct TensorSpec {
  std::string rel;
  std::int64_t offset = 0, count = 0, rows = 0, cols = 0;  // cols == 0: 1-D (bias)
};
std::vector<TensorSpec> tensor_specs(const model::MlpConfig& m);

// The root attributes: the save's facts and the run's configuration.
struct CheckpointMeta {
  std::string format = kCheckpointFormat;
  std::int64_t format_version = kCheckpointFormatVersion;
  std::int64_t steps_done = 0, data_position = 0, world_size = 0;
  std::string strategy, backend, data_source;
  ddp::TrainConfig config;  // the `stored` fields; the others keep their defaults when read
  RunInfo run;              // version 2 on; empty in a version-1 file
};

// Writes every root attribute and the digest.
void write_root_attributes(hid_t root, const CheckpointMeta& meta);
// Reads and checks them: format, version, digest, plausible sizes, data_position consistent.
CheckpointMeta read_root_attributes(hid_t root, const std::string& file);

// Reads and checks the root attributes of checkpoint `path` only (no tensors): what rotation and the
// directory check need. Throws core::UsageError as read_checkpoint does.
CheckpointMeta read_checkpoint_meta(const std::string& path);
// The identity of the run a checkpoint belongs to: its run_id, or for a version-1 file "v1-" and the
// digest of its `resume` fields and data source (io/run_info.hpp).
std::string run_identity(const CheckpointMeta& meta);

// One `resume` field (or the data source) whose value differs between a checkpoint and a run.
struct ConfigDifference {
  std::string field;        // the field's name, or "data_source"
  std::string saved, run;   // the values as field_text spells them
  bool changeable = false;  // a --allow-changed field (FieldRules::changeable)
};
std::vector<ConfigDifference> config_differences(const ddp::TrainConfig& saved, const std::string& saved_source,
                                                 const ddp::TrainConfig& run, const std::string& run_source);
// "field = saved (this run: value)" of each, "; "-separated.
std::string differences_text(const std::vector<ConfigDifference>& diffs);
// differences_text of every difference: empty when the checkpoint fits the run.
std::string compatibility_problems(const ddp::TrainConfig& saved, const std::string& saved_source,
                                   const ddp::TrainConfig& run, const std::string& run_source);

// The per-dataset checksum (attribute fnv1a64): 64-bit FNV-1a of the float32 bytes.
std::uint64_t tensor_checksum(const float* p, std::int64_t count);
// "0x0123456789abcdef"
std::string hex64(std::uint64_t v);
// The /optimizer attribute state_buffers: the names, comma-separated.
std::string join_names(const std::vector<std::string>& names);

}  // namespace microddp::io
