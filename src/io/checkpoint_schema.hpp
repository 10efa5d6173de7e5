// checkpoint_schema.hpp — what a checkpoint file holds (format version kCheckpointFormatVersion;
// docs/checkpoint_format.md is the full reference), shared by the save and the load:
//
//   /                         root attributes: format, format_version, steps_done, data_position,
//                             world_size, strategy, backend (the save's), data_source, rng, then every
//                             `stored` field of ddp::train_config_fields() in table order, and
//                             meta_fnv1a64, the digest of all of them in that order
//   /model/layer_NN/weight    float32 (out, in) row-major      attribute fnv1a64 (of the bytes)
//   /model/layer_NN/bias      float32 (out,)                   attribute fnv1a64
//   /optimizer                attributes: name, step_count, state_buffers ("exp_avg,exp_avg_sq")
//   /optimizer/<buf>/layer_NN/{weight,bias}   same shapes as the parameters, fnv1a64 each
//
// Everything is world-size independent (parameters and optimizer state are replicated in DDP). The
// tensor layout comes from model::param_layout, so reading and inspecting need no model.
// Readers treat the file as untrusted: every failure is core::UsageError naming the file and the
// attribute, with the expected and the actual value.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ddp/train_config.hpp"

namespace microddp::io {

inline constexpr std::int64_t kCheckpointFormatVersion = 1;
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
};

// Writes every root attribute and the digest.
void write_root_attributes(hid_t root, const CheckpointMeta& meta);
// Reads and checks them: format, version, digest, plausible sizes, data_position consistent.
CheckpointMeta read_root_attributes(hid_t root, const std::string& file);

// "; "-separated "field = saved (this run: value)" for every `resume` field that differs, then the
// data source; empty when the checkpoint fits the run.
std::string compatibility_problems(const ddp::TrainConfig& saved, const std::string& saved_source,
                                   const ddp::TrainConfig& run, const std::string& run_source);

// The per-dataset checksum (attribute fnv1a64): 64-bit FNV-1a of the float32 bytes.
std::uint64_t tensor_checksum(const float* p, std::int64_t count);
// "0x0123456789abcdef"
std::string hex64(std::uint64_t v);
// The /optimizer attribute state_buffers: the names, comma-separated.
std::string join_names(const std::vector<std::string>& names);

}  // namespace microddp::io
