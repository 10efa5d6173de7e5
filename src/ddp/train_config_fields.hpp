// train_config_fields.hpp — the one list of the training configuration's fields.
//
// Every member of TrainConfig, model::MlpConfig, model::OptimizerConfig and GradSyncOptions that
// configures a run is one row of train_config_fields(): its name (the checkpoint attribute, the
// JSON key and the name in messages), its type, how to read and write it, and three rules:
//   agree   ranks refuse to start when their values differ (Trainer::setup);
//   stored  written to checkpoints as a root attribute and read back (io/checkpoint_schema);
//   resume  a checkpoint with another value does not fit the run (io::check_compatible);
//   changeable  ... unless the resume names it in --allow-changed: a setting that changes only the
//           steps still to come (the learning-rate plan), never what has been computed so far.
// A stored field is a root attribute from checkpoint format version `since_format` on (older files
// do not have it: it reads as its default).
// Every consumer iterates the table instead of listing fields by hand: rank agreement, checkpoint
// write, read and compatibility, the `train --metrics` summary and run-record reading
// (perf/config_json). The only member that is not a row is TrainConfig::faults (test hooks, set per
// rank by design); train_config_fields.cpp names every member in a structured binding, so adding a
// member breaks the build there until it gets a row.
//
// Contract:
//   * Table order is the checkpoint's attribute order for the stored fields. The checkpoint digest
//     covers that order (docs/checkpoint_format.md), so rows are only ever appended; a new stored
//     field is a new checkpoint format version.
//   * Values compare as the run uses them: integers, booleans and strings exactly; float32 settings
//     by bit pattern (two spellings of one float are one value, any differing bit is a difference);
//     bucket sizes (MiB as given) by the bytes the bucket planner plans (mib_to_bytes, rounded to the
//     nearest byte: the only MiB -> bytes conversion).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "ddp/train_config.hpp"

namespace microddp::ddp {

enum class FieldType {
  Int,      // std::int64_t
  UInt,     // std::uint64_t (the seed)
  Float32,  // float settings; carried as double (exact)
  MiB,      // double, a size in MiB (bucket caps)
  String,   // names (optimizer, strategy, NaN policy)
  Bool,
};

// One field's value. Int -> int64_t, UInt -> uint64_t, Float32 and MiB -> double, String ->
// string, Bool -> bool: a ConfigField's get() returns, and its set() requires, that alternative.
using ConfigValue = std::variant<std::int64_t, std::uint64_t, double, std::string, bool>;

struct FieldRules {
  bool agree = false;   // every rank must have the same value
  bool stored = false;  // a checkpoint root attribute
  bool resume = false;  // must equal the checkpoint's value to resume from it
  bool changeable = false;  // resume: ... unless --allow-changed names it
  std::int64_t since_format = 1;  // stored: the first checkpoint format version with the attribute
};

struct ConfigField {
  std::string_view name;
  FieldType type;
  FieldRules rules;
  ConfigValue (*get)(const TrainConfig&);
  // Throws core::UsageError when the value is not valid for the field (an unknown NaN policy).
  void (*set)(TrainConfig&, const ConfigValue&);
};

// Every configuration field, in checkpoint attribute order (see above).
std::span<const ConfigField> train_config_fields();
// nullptr when no field has that name.
const ConfigField* find_config_field(std::string_view name);

// The value as one integer, for comparing across ranks with an all-gather: integers as they are
// (the seed's bits), float32 by bit pattern, MiB as bytes (mib_to_bytes), strings as their FNV-1a
// hash, booleans 0/1. Equal codes <=> equal values (strings: up to a 64-bit hash collision).
std::int64_t field_code(const ConfigField& f, const TrainConfig& c);
// What a code stands for, for messages: "16", "0.001", "25 MiB (26214400 bytes)", "true", and for
// strings "name hash 0x..." (the name itself is not exchanged).
std::string code_text(const ConfigField& f, std::int64_t code);
// Equal as the run uses the field (see the contract above; strings compare exactly).
bool field_equal(const ConfigField& f, const TrainConfig& a, const TrainConfig& b);
// The value for messages: decimal integers, the shortest decimal that reads back to the same float
// or double, the string itself, true/false.
std::string field_text(const ConfigField& f, const TrainConfig& c);

}  // namespace microddp::ddp
