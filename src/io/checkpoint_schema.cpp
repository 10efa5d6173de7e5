// checkpoint_schema.cpp — tensor layout, root attributes and their digest, compatibility.
#include "io/checkpoint_schema.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <utility>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "ddp/train_config_fields.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"
#include "model/param_layout.hpp"

namespace microddp::io {

namespace {

// One root attribute as stored: HDF5 has no boolean, so booleans are int64 0/1; float32 settings
// are float64 (exact).
struct Attr {
  enum Kind { I64, U64, F64, Str } kind = I64;
  std::string name;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double f = 0;
  std::string s;
};

Attr attr_i64(std::string name, std::int64_t v) { return {Attr::I64, std::move(name), v, 0, 0, ""}; }
Attr attr_f64(std::string name, double v) { return {Attr::F64, std::move(name), 0, 0, v, ""}; }
Attr attr_str(std::string name, std::string v) { return {Attr::Str, std::move(name), 0, 0, 0, std::move(v)}; }

Attr::Kind kind_of(ddp::FieldType t) {
  switch (t) {
    case ddp::FieldType::Int:
    case ddp::FieldType::Bool:
      return Attr::I64;
    case ddp::FieldType::UInt:
      return Attr::U64;
    case ddp::FieldType::Float32:
    case ddp::FieldType::MiB:
      return Attr::F64;
    case ddp::FieldType::String:
      return Attr::Str;
  }
  return Attr::I64;  // not reached
}

Attr attr_of(const ddp::ConfigField& f, const ddp::TrainConfig& c) {
  Attr a;
  a.kind = kind_of(f.type);
  a.name = std::string(f.name);
  const ddp::ConfigValue v = f.get(c);
  switch (f.type) {
    case ddp::FieldType::Int:
      a.i = std::get<std::int64_t>(v);
      break;
    case ddp::FieldType::Bool:
      a.i = std::get<bool>(v) ? 1 : 0;
      break;
    case ddp::FieldType::UInt:
      a.u = std::get<std::uint64_t>(v);
      break;
    case ddp::FieldType::Float32:
    case ddp::FieldType::MiB:
      a.f = std::get<double>(v);
      break;
    case ddp::FieldType::String:
      a.s = std::get<std::string>(v);
      break;
  }
  return a;
}

ddp::ConfigValue value_of(const ddp::ConfigField& f, const Attr& a) {
  switch (f.type) {
    case ddp::FieldType::Int:
      return a.i;
    case ddp::FieldType::Bool:
      return a.i != 0;
    case ddp::FieldType::UInt:
      return a.u;
    case ddp::FieldType::Float32:
    case ddp::FieldType::MiB:
      return a.f;
    case ddp::FieldType::String:
      return a.s;
  }
  return a.i;  // not reached
}

constexpr const char* kRngDescription =
    "philox4x32-10 counter-based (core/rng.hpp): every random value is a pure function of (seed, stream, "
    "counter); the only RNG state is the seed and data_position";

// The root attributes of format version m.format_version in their fixed order; the digest covers
// exactly this list.
std::vector<Attr> to_attrs(const CheckpointMeta& m) {
  std::vector<Attr> attrs = {attr_str("format", m.format),         attr_i64("format_version", m.format_version),
                             attr_i64("steps_done", m.steps_done), attr_i64("data_position", m.data_position),
                             attr_i64("world_size", m.world_size), attr_str("strategy", m.strategy),
                             attr_str("backend", m.backend),       attr_str("data_source", m.data_source),
                             attr_str("rng", kRngDescription)};
  for (const auto& f : ddp::train_config_fields()) {
    if (f.rules.stored && f.rules.since_format <= m.format_version) attrs.push_back(attr_of(f, m.config));
  }
  if (m.format_version >= 2) {
    const RunInfo& r = m.run;
    for (Attr a : {attr_str("run_id", r.run_id), attr_str("plan_history", r.plan_history),
                   attr_str("best_metric", r.best_metric), attr_f64("best_value", r.best_value),
                   attr_i64("best_step", r.best_step), attr_i64("evals_since_best", r.evals_since_best),
                   attr_i64("stopped_early", r.stopped_early ? 1 : 0)}) {
      attrs.push_back(std::move(a));
    }
  }
  return attrs;
}

// FNV-1a over "name=value;" with exact encodings (%a for doubles), so any changed bit shows.
std::uint64_t attrs_digest(const std::vector<Attr>& attrs) {
  std::string s;
  char b[64];
  for (const auto& a : attrs) {
    s += a.name + "=";
    switch (a.kind) {
      case Attr::I64:
        s += std::to_string(a.i);
        break;
      case Attr::U64:
        s += std::to_string(a.u);
        break;
      case Attr::F64:
        std::snprintf(b, sizeof b, "%a", a.f);
        s += b;
        break;
      case Attr::Str:
        s += a.s;
        break;
    }
    s += ";";
  }
  return core::fnv1a64(s.data(), s.size());
}

}  // namespace

std::vector<TensorSpec> tensor_specs(const model::MlpConfig& m) {
  std::vector<TensorSpec> out;
  for (const auto& p : model::param_layout(m)) {
    std::string rel = p.name;
    std::replace(rel.begin(), rel.end(), '.', '/');
    out.push_back({rel, p.offset, p.count, p.rows, p.is_bias ? 0 : p.cols});
  }
  return out;
}

void write_root_attributes(hid_t root, const CheckpointMeta& meta) {
  const std::vector<Attr> attrs = to_attrs(meta);
  for (const auto& a : attrs) {
    switch (a.kind) {
      case Attr::I64:
        write_attr(root, a.name.c_str(), a.i);
        break;
      case Attr::U64:
        write_attr_u64(root, a.name.c_str(), a.u);
        break;
      case Attr::F64:
        write_attr(root, a.name.c_str(), a.f);
        break;
      case Attr::Str:
        write_attr(root, a.name.c_str(), a.s);
        break;
    }
  }
  write_attr_u64(root, "meta_fnv1a64", attrs_digest(attrs));
}

CheckpointMeta read_root_attributes(hid_t root, const std::string& file) {
  auto where = [&](const std::string& n) { return "checkpoint " + file + ": attribute '" + n + "'"; };
  const std::string format = read_attr_str(root, "format", where("format"));
  MDDP_USAGE_CHECK(format == kCheckpointFormat, where("format")
                                                    << " is '" << format << "', expected '" << kCheckpointFormat
                                                    << "' (not a microddp checkpoint)");
  const std::int64_t version = read_attr_i64(root, "format_version", where("format_version"));
  MDDP_USAGE_CHECK(version >= kOldestCheckpointFormatVersion && version <= kCheckpointFormatVersion,
                   "checkpoint " << file << ": format_version is " << version << ", this build reads versions "
                                 << kOldestCheckpointFormatVersion << " to " << kCheckpointFormatVersion);
  CheckpointMeta shape;
  shape.format_version = version;
  std::vector<Attr> attrs = to_attrs(shape);  // names and kinds of this version; values read below
  for (auto& a : attrs) {
    switch (a.kind) {
      case Attr::I64:
        a.i = read_attr_i64(root, a.name.c_str(), where(a.name));
        break;
      case Attr::U64:
        a.u = read_attr_u64(root, a.name.c_str(), where(a.name));
        break;
      case Attr::F64:
        a.f = read_attr_f64(root, a.name.c_str(), where(a.name));
        break;
      case Attr::Str:
        a.s = read_attr_str(root, a.name.c_str(), where(a.name));
        break;
    }
  }
  const std::uint64_t stored = read_attr_u64(root, "meta_fnv1a64", where("meta_fnv1a64"));
  const std::uint64_t computed = attrs_digest(attrs);
  MDDP_USAGE_CHECK(stored == computed, "checkpoint " << file << ": attribute digest mismatch (meta_fnv1a64 stored "
                                                     << hex64(stored) << ", computed " << hex64(computed)
                                                     << "): root attributes are corrupted or were edited");
  std::map<std::string, const Attr*> by;
  for (const auto& a : attrs) by[a.name] = &a;
  CheckpointMeta m;
  m.format = format;
  m.format_version = version;
  m.steps_done = by["steps_done"]->i;
  m.data_position = by["data_position"]->i;
  m.world_size = by["world_size"]->i;
  m.strategy = by["strategy"]->s;
  m.backend = by["backend"]->s;
  m.data_source = by["data_source"]->s;
  if (version >= 2) {
    m.run.run_id = by["run_id"]->s;
    m.run.plan_history = by["plan_history"]->s;
    m.run.best_metric = by["best_metric"]->s;
    m.run.best_value = by["best_value"]->f;
    m.run.best_step = by["best_step"]->i;
    m.run.evals_since_best = by["evals_since_best"]->i;
    m.run.stopped_early = by["stopped_early"]->i != 0;
  }
  for (const auto& f : ddp::train_config_fields()) {
    if (!f.rules.stored || f.rules.since_format > version) continue;
    try {
      f.set(m.config, value_of(f, *by[std::string(f.name)]));
    } catch (const core::UsageError& e) {  // a stored name the field does not accept
      MDDP_USAGE_CHECK(false, where(std::string(f.name)) << ": " << e.what());
    }
  }
  // Plausibility (the digest matched, but a file can be crafted): bounds as in train_options.cpp.
  const auto& c = m.config;
  constexpr std::int64_t kMaxDim = 1 << 24, kMaxDepth = 4096;
  auto in_range = [&](const char* n, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    MDDP_USAGE_CHECK(v >= lo && v <= hi, where(n) << " is " << v << ", outside [" << lo << ", " << hi << "]");
  };
  in_range("in_dim", c.model.in_dim, 1, kMaxDim);
  in_range("width", c.model.width, 1, kMaxDim);
  in_range("depth", c.model.depth, 1, kMaxDepth);
  in_range("classes", c.model.classes, 2, kMaxDim);
  in_range("global_batch", c.global_batch, 1, kMaxDim);
  in_range("accum_steps", c.accum_steps, 1, kMaxDim);
  in_range("steps_done", m.steps_done, 0, std::int64_t{1} << 40);
  MDDP_USAGE_CHECK(m.data_position == m.steps_done * c.accum_steps * c.global_batch,
                   where("data_position")
                       << " is " << m.data_position << ", expected steps_done x accum_steps x global_batch = "
                       << m.steps_done * c.accum_steps * c.global_batch);
  return m;
}

CheckpointMeta read_checkpoint_meta(const std::string& path) {
  hdf5_quiet();
  MDDP_USAGE_CHECK(H5Fis_hdf5(path.c_str()) > 0, "checkpoint " << path << ": not an HDF5 file");
  Hid file(MDDP_HDF5_FILE_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "checkpoint " + path,
                                "cannot open (truncated or corrupt file?)"));
  return read_root_attributes(file, path);
}

std::string run_identity(const CheckpointMeta& meta) {
  if (!meta.run.run_id.empty()) return meta.run.run_id;
  std::string text = meta.data_source;
  for (const auto& f : ddp::train_config_fields()) {
    if (f.rules.resume) text += ";" + std::string(f.name) + "=" + ddp::field_text(f, meta.config);
  }
  return "v1-" + hex64(core::fnv1a64(text.data(), text.size())).substr(2);
}

std::vector<ConfigDifference> config_differences(const ddp::TrainConfig& saved, const std::string& saved_source,
                                                 const ddp::TrainConfig& run, const std::string& run_source) {
  std::vector<ConfigDifference> out;
  for (const auto& f : ddp::train_config_fields()) {
    if (f.rules.resume && !ddp::field_equal(f, saved, run))
      out.push_back({std::string(f.name), ddp::field_text(f, saved), ddp::field_text(f, run), f.rules.changeable});
  }
  if (saved_source != run_source) out.push_back({"data_source", saved_source, run_source, false});
  return out;
}

std::string differences_text(const std::vector<ConfigDifference>& diffs) {
  std::ostringstream bad;
  for (const auto& d : diffs) {
    bad << (bad.tellp() > 0 ? "; " : "") << d.field << " = " << d.saved << " (this run: " << d.run << ")";
  }
  return bad.str();
}

std::string compatibility_problems(const ddp::TrainConfig& saved, const std::string& saved_source,
                                   const ddp::TrainConfig& run, const std::string& run_source) {
  return differences_text(config_differences(saved, saved_source, run, run_source));
}

std::uint64_t tensor_checksum(const float* p, std::int64_t count) {
  return core::fnv1a64(p, static_cast<std::size_t>(count) * sizeof(float));
}

std::string hex64(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& x : names) s += (s.empty() ? "" : ",") + x;
  return s;
}

}  // namespace microddp::io
