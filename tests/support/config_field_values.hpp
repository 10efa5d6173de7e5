// config_field_values.hpp — for tests that walk ddp::train_config_fields(): a valid value of a
// field that differs from the one a configuration has, so a test can change exactly one field.
// Numbers move (integers +1, reals halved or set to 0.25 from 0, MiB +1), booleans flip, names
// switch to another valid name. A string field this helper does not know fails the calling test,
// so a new field cannot slip through the walks unnoticed.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ddp/train_config_fields.hpp"

namespace microddp::testing {

inline ddp::ConfigValue another_value(const ddp::ConfigField& f, const ddp::TrainConfig& c) {
  const ddp::ConfigValue v = f.get(c);
  switch (f.type) {
    case ddp::FieldType::Int:
      return std::get<std::int64_t>(v) + 1;
    case ddp::FieldType::UInt:
      return std::get<std::uint64_t>(v) + 1;
    case ddp::FieldType::Float32: {
      const double x = std::get<double>(v);
      return x == 0.0 ? 0.25 : x * 0.5;  // both exact in float32, and valid for every setting
    }
    case ddp::FieldType::MiB:
      return std::get<double>(v) + 1.0;
    case ddp::FieldType::Bool:
      return !std::get<bool>(v);
    case ddp::FieldType::String: {
      const std::string s = std::get<std::string>(v);
      if (f.name == "optimizer") return std::string(s == "adamw" ? "adam" : "adamw");
      if (f.name == "strategy") return std::string(s == "flat" ? "naive" : "flat");
      if (f.name == "on_nan") return std::string(s == "skip" ? "abort" : "skip");
      if (f.name == "shard") return std::string(s == "optimizer" ? "gradients" : "optimizer");
      if (f.name == "cuda_graph") return std::string(s == "off" ? "on" : "off");
      if (f.name == "precision") return std::string(s == "bf16" ? "fp32" : "bf16");
      if (f.name == "lr_schedule") return std::string(s == "step" ? "constant" : "step");
      if (f.name == "lr_milestones") return s.empty() ? std::string("5") : s + ",1000000";
      if (f.name == "grad_compression") {
        const bool powersgd = ddp::parse_compression_mode(s) == ddp::CompressionMode::PowerSgd;
        return std::string(
            ddp::compression_mode_name(powersgd ? ddp::CompressionMode::None : ddp::CompressionMode::PowerSgd));
      }
      ADD_FAILURE() << "config_field_values.hpp knows no other value for string field " << f.name;
      return s;
    }
  }
  return v;  // not reached
}

// `c` with field `f` changed to another_value().
inline ddp::TrainConfig with_field_changed(const ddp::ConfigField& f, ddp::TrainConfig c) {
  f.set(c, another_value(f, c));
  return c;
}

}  // namespace microddp::testing
