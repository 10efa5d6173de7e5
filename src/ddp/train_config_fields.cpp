// train_config_fields.cpp — the field table, its member-count guard, codes and texts.
#include "ddp/train_config_fields.hpp"

#include <array>
#include <bit>
#include <charconv>
#include <cstdio>
#include <tuple>
#include <type_traits>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "ddp/bucket_planner.hpp"
#include "ddp/numerics.hpp"
#include "ddp/strategy.hpp"

namespace microddp::ddp {

namespace {

// ---- the member-count guard ---------------------------------------------------------------------
// A structured binding must name every data member, so a member added to any of these structs stops
// the build HERE. Give it a row in fields() below (and count it in kConfigMembers), or, if it does not
// configure the run, say why next to `faults`.
[[maybe_unused]] void every_member_is_named(const TrainConfig& c) {
  [[maybe_unused]] const auto& [model, optimizer, lr_schedule, steps, global_batch, seed, strategy, sync_options, compression,
                                accum_steps, keep_events, layer_events, check_every, sync_check_every, on_nan,
                                clip_grad_norm, shard, prefetch, cuda_graph, precision, simulate_compute_ms,
                                faults  // not a row: test hooks, armed per rank (core/fault_plan.hpp)
  ] = c;
  [[maybe_unused]] const auto& [in_dim, width, depth, classes] = c.model;
  [[maybe_unused]] const auto& [name, lr, beta1, beta2, eps, weight_decay, momentum, nesterov] = c.optimizer;
  [[maybe_unused]] const auto& [bucket_mb, first_bucket_mb] = c.sync_options;
  [[maybe_unused]] const auto& [kind, warmup_steps, min_lr, decay_steps, milestones, gamma] = c.lr_schedule;
  [[maybe_unused]] const auto& [grad_compression, powersgd_rank, powersgd_start_step, error_feedback] = c.compression;
}
// Rows the structs above call for: TrainConfig's 22 members less `faults` and its 5 nested structs
// (model, optimizer, lr_schedule, sync_options, compression: their members are the rows), plus their
// 4 + 8 + 6 + 2 + 4 members.
constexpr std::size_t kConfigMembers = (22 - 1 - 5) + 4 + 8 + 6 + 2 + 4;

// ---- accessors ------------------------------------------------------------------------------------
// Where a field lives: a member of TrainConfig, or a member of one of its nested structs.
template <auto Member>
struct Top {
  static auto& ref(TrainConfig& c) { return c.*Member; }
  static const auto& ref(const TrainConfig& c) { return c.*Member; }
};
template <auto Outer, auto Inner>
struct Nested {
  static auto& ref(TrainConfig& c) { return (c.*Outer).*Inner; }
  static const auto& ref(const TrainConfig& c) { return (c.*Outer).*Inner; }
};

// The field type a member's C++ type stands for (double members are bucket sizes in MiB).
template <class T>
constexpr FieldType type_of() {
  if constexpr (std::is_same_v<T, std::int64_t>)
    return FieldType::Int;
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return FieldType::UInt;
  else if constexpr (std::is_same_v<T, float>)
    return FieldType::Float32;
  else if constexpr (std::is_same_v<T, double>)
    return FieldType::MiB;
  else if constexpr (std::is_same_v<T, std::string>)
    return FieldType::String;
  else if constexpr (std::is_same_v<T, bool>)
    return FieldType::Bool;
  else
    static_assert(sizeof(T) == 0, "a configuration member of a type the table does not know");
}

template <class Path>
ConfigValue get_member(const TrainConfig& c) {
  const auto& v = Path::ref(c);
  using T = std::remove_cvref_t<decltype(v)>;
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<double>(v);  // exact
  } else {
    return v;
  }
}

template <class Path>
void set_member(TrainConfig& c, const ConfigValue& value) {
  auto& v = Path::ref(c);
  using T = std::remove_cvref_t<decltype(v)>;
  if constexpr (std::is_same_v<T, float>) {
    v = static_cast<float>(std::get<double>(value));
  } else {
    v = std::get<T>(value);
  }
}

template <class Path>
ConfigField row(std::string_view name, FieldRules rules) {
  using T = std::remove_cvref_t<decltype(Path::ref(std::declval<const TrainConfig&>()))>;
  return {name, type_of<T>(), rules, &get_member<Path>, &set_member<Path>};
}

// The NaN policy is an enum in TrainConfig and its name everywhere outside.
ConfigValue get_on_nan(const TrainConfig& c) { return std::string(nan_policy_name(c.on_nan)); }
void set_on_nan(TrainConfig& c, const ConfigValue& v) { c.on_nan = parse_nan_policy(std::get<std::string>(v)); }
// Likewise the strategy (ddp/strategy.hpp spells it).
ConfigValue get_strategy(const TrainConfig& c) { return std::string(strategy_name(c.strategy)); }
void set_strategy(TrainConfig& c, const ConfigValue& v) { c.strategy = parse_strategy(std::get<std::string>(v)); }
ConfigValue get_cuda_graph(const TrainConfig& c) { return std::string(cuda_graph_mode_name(c.cuda_graph)); }
void set_cuda_graph(TrainConfig& c, const ConfigValue& v) {
  c.cuda_graph = parse_cuda_graph_mode(std::get<std::string>(v));
}
ConfigValue get_precision(const TrainConfig& c) { return std::string(core::precision_name(c.precision)); }
void set_precision(TrainConfig& c, const ConfigValue& v) {
  c.precision = core::parse_precision(std::get<std::string>(v));
}
ConfigValue get_lr_schedule(const TrainConfig& c) { return std::string(model::lr_schedule_name(c.lr_schedule.kind)); }
void set_lr_schedule(TrainConfig& c, const ConfigValue& v) {
  c.lr_schedule.kind = model::parse_lr_schedule(std::get<std::string>(v));
}
ConfigValue get_shard(const TrainConfig& c) { return std::string(zero::shard_mode_name(c.shard)); }
void set_shard(TrainConfig& c, const ConfigValue& v) { c.shard = zero::parse_shard_mode(std::get<std::string>(v)); }
// And the compression mode (ddp/compression/compression_config.hpp spells it).
ConfigValue get_compression(const TrainConfig& c) { return std::string(compression_mode_name(c.compression.mode)); }
void set_compression(TrainConfig& c, const ConfigValue& v) {
  c.compression.mode = parse_compression_mode(std::get<std::string>(v));
}

constexpr FieldRules kRunShape{.agree = true, .stored = true, .resume = true};     // the checkpoint must match
constexpr FieldRules kRunLength{.agree = true, .stored = true, .resume = false};   // recorded; a resume may change it
constexpr FieldRules kRanksOnly{.agree = true, .stored = false, .resume = false};  // how this run runs
constexpr FieldRules kLocal{};
// The learning-rate plan (model/lr_schedule.hpp): ranks agree, checkpoints store it (from format
// version 2 on), and a resume must match it unless --allow-changed names it: it decides only the
// rate of the steps still to come.
constexpr FieldRules kLrPlan{.agree = true, .stored = true, .resume = true, .changeable = true};
constexpr FieldRules kLrPlanV2{.agree = true, .stored = true, .resume = true, .changeable = true, .since_format = 2};
// Gradient compression: the ranks must agree, and a resume must match the checkpoint's (its state's
// meaning and shape depend on them), but the values are not root attributes: they live with the
// compressor's state in the checkpoint's /compression group (io/checkpoint_compression.hpp), absent
// (= defaults, mode none) for an uncompressed run.
constexpr FieldRules kCompression{
    .agree = true,
    .stored = false,
    .resume = true};  // what this rank records: may differ between ranks, not checkpointed

using TC = TrainConfig;
using MC = model::MlpConfig;
using OC = model::OptimizerConfig;
using SO = GradSyncOptions;
using GC = GradCompressionConfig;
using LS = model::LrScheduleConfig;

std::span<const ConfigField> fields() {
  // Stored rows first, in the order of format version 1's root attributes (the digest covers it);
  // version 2's stored rows are appended at the end (the attribute order is the table's).
  static const auto table = std::to_array<ConfigField>({
      row<Top<&TC::seed>>("seed", kRunShape),
      row<Nested<&TC::model, &MC::in_dim>>("in_dim", kRunShape),
      row<Nested<&TC::model, &MC::width>>("width", kRunShape),
      row<Nested<&TC::model, &MC::depth>>("depth", kRunShape),
      row<Nested<&TC::model, &MC::classes>>("classes", kRunShape),
      row<Top<&TC::global_batch>>("global_batch", kRunShape),
      row<Top<&TC::accum_steps>>("accum_steps", kRunShape),
      row<Top<&TC::steps>>("steps", kRunLength),
      // Bucket caps only shape the collectives, not the result: any strategy may resume.
      row<Nested<&TC::sync_options, &SO::bucket_mb>>("bucket_mb", kRunLength),
      row<Nested<&TC::sync_options, &SO::first_bucket_mb>>("first_bucket_mb", kRunLength),
      row<Nested<&TC::optimizer, &OC::name>>("optimizer", kRunShape),
      row<Nested<&TC::optimizer, &OC::lr>>("lr", kLrPlan),
      row<Nested<&TC::optimizer, &OC::beta1>>("beta1", kRunShape),
      row<Nested<&TC::optimizer, &OC::beta2>>("beta2", kRunShape),
      row<Nested<&TC::optimizer, &OC::eps>>("eps", kRunShape),
      row<Nested<&TC::optimizer, &OC::weight_decay>>("weight_decay", kRunShape),
      row<Nested<&TC::optimizer, &OC::momentum>>("momentum", kRunShape),
      row<Nested<&TC::optimizer, &OC::nesterov>>("nesterov", kRunShape),
      // Not stored (format version 1 has no attribute for them). The strategy of the save is
      // recorded with world_size and backend among the save's facts; a resume may use another.
      ConfigField{"strategy", FieldType::String, kRanksOnly, &get_strategy, &set_strategy},
      row<Top<&TC::check_every>>("check_every", kRanksOnly),
      row<Top<&TC::sync_check_every>>("sync_check_every", kRanksOnly),
      ConfigField{"on_nan", FieldType::String, kRanksOnly, &get_on_nan, &set_on_nan},
      row<Top<&TC::clip_grad_norm>>("clip_grad_norm", kRanksOnly),
      // How the state is distributed, not what it is: a checkpoint holds the full state in any
      // mode, so a resume may change it (the save records it with its strategy).
      ConfigField{"shard", FieldType::String, kRanksOnly, &get_shard, &set_shard},
      ConfigField{"grad_compression", FieldType::String, kCompression, &get_compression, &set_compression},
      row<Nested<&TC::compression, &GC::powersgd_rank>>("powersgd_rank", kCompression),
      row<Nested<&TC::compression, &GC::powersgd_start_step>>("powersgd_start_step", kCompression),
      row<Nested<&TC::compression, &GC::error_feedback>>("error_feedback", kCompression),
      row<Top<&TC::keep_events>>("keep_events", kLocal),
      row<Top<&TC::layer_events>>("layer_events", kLocal),
      // How the input is prepared, not what it is (the same batches either way): per rank.
      row<Top<&TC::prefetch>>("prefetch", kLocal),
      // How the step is launched, not what it computes (bitwise the same); agreed so that all ranks
      // launch their collectives the same way (step_graph.hpp).
      ConfigField{"cuda_graph", FieldType::String, kRanksOnly, &get_cuda_graph, &set_cuda_graph},
      // What the GEMMs compute in: ranks must agree (their replicas would drift apart); a resume may
      // change it (the checkpoint's weights and optimizer state are fp32 in every precision).
      ConfigField{"precision", FieldType::String, kRanksOnly, &get_precision, &set_precision},
      // How long the emulated device computes, not what (bitwise the same): agreed so that a run's
      // header, record and timings describe every rank (ddp/simulated_compute.hpp).
      row<Top<&TC::simulate_compute_ms>>("simulate_compute_ms", kRanksOnly),
      // Format version 2's stored rows: the learning-rate schedule.
      ConfigField{"lr_schedule", FieldType::String, kLrPlanV2, &get_lr_schedule, &set_lr_schedule},
      row<Nested<&TC::lr_schedule, &LS::warmup_steps>>("warmup_steps", kLrPlanV2),
      row<Nested<&TC::lr_schedule, &LS::min_lr>>("min_lr", kLrPlanV2),
      row<Nested<&TC::lr_schedule, &LS::decay_steps>>("decay_steps", kLrPlanV2),
      row<Nested<&TC::lr_schedule, &LS::milestones>>("lr_milestones", kLrPlanV2),
      row<Nested<&TC::lr_schedule, &LS::gamma>>("lr_gamma", kLrPlanV2),
  });
  static_assert(std::tuple_size_v<decltype(table)> == kConfigMembers,
                "one row per configuration member (see every_member_is_named)");
  return table;
}

std::string shortest(double v) {
  char b[64];
  const auto r = std::to_chars(b, b + sizeof b, v);
  return std::string(b, r.ptr);
}
std::string shortest(float v) {
  char b[64];
  const auto r = std::to_chars(b, b + sizeof b, v);
  return std::string(b, r.ptr);
}

}  // namespace

std::span<const ConfigField> train_config_fields() { return fields(); }

const ConfigField* find_config_field(std::string_view name) {
  for (const auto& f : fields()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::int64_t field_code(const ConfigField& f, const TrainConfig& c) {
  const ConfigValue v = f.get(c);
  switch (f.type) {
    case FieldType::Int:
      return std::get<std::int64_t>(v);
    case FieldType::UInt:
      return static_cast<std::int64_t>(std::get<std::uint64_t>(v));
    case FieldType::Float32:
      return std::bit_cast<std::uint32_t>(static_cast<float>(std::get<double>(v)));
    case FieldType::MiB:
      return mib_to_bytes(std::get<double>(v));
    case FieldType::String: {
      const auto& s = std::get<std::string>(v);
      return static_cast<std::int64_t>(core::fnv1a64(s.data(), s.size()));
    }
    case FieldType::Bool:
      return std::get<bool>(v) ? 1 : 0;
  }
  return 0;  // not reached
}

std::string code_text(const ConfigField& f, std::int64_t code) {
  switch (f.type) {
    case FieldType::Int:
      return std::to_string(code);
    case FieldType::UInt:
      return std::to_string(static_cast<std::uint64_t>(code));
    case FieldType::Float32:
      return shortest(std::bit_cast<float>(static_cast<std::uint32_t>(code)));
    case FieldType::MiB:
      return shortest(static_cast<double>(code) / (1024.0 * 1024.0)) + " MiB (" + std::to_string(code) + " bytes)";
    case FieldType::String: {
      char b[40];
      std::snprintf(b, sizeof b, "name hash 0x%016llx", static_cast<unsigned long long>(code));
      return b;
    }
    case FieldType::Bool:
      return code != 0 ? "true" : "false";
  }
  return "";  // not reached
}

bool field_equal(const ConfigField& f, const TrainConfig& a, const TrainConfig& b) {
  if (f.type == FieldType::String) return f.get(a) == f.get(b);
  return field_code(f, a) == field_code(f, b);
}

std::string field_text(const ConfigField& f, const TrainConfig& c) {
  const ConfigValue v = f.get(c);
  switch (f.type) {
    case FieldType::Int:
      return std::to_string(std::get<std::int64_t>(v));
    case FieldType::UInt:
      return std::to_string(std::get<std::uint64_t>(v));
    case FieldType::Float32:
      return shortest(static_cast<float>(std::get<double>(v)));
    case FieldType::MiB:
      return shortest(std::get<double>(v));
    case FieldType::String:
      return std::get<std::string>(v);
    case FieldType::Bool:
      return std::get<bool>(v) ? "true" : "false";
  }
  return "";  // not reached
}

}  // namespace microddp::ddp
