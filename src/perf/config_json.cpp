// config_json.cpp — TrainConfig <-> JSON through the field table.
#include "perf/config_json.hpp"

#include <string>

#include "core/error.hpp"
#include "ddp/train_config_fields.hpp"

namespace microddp::perf {

nlohmann::json train_config_to_json(const ddp::TrainConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& f : ddp::train_config_fields()) {
    const std::string key(f.name);
    std::visit([&](const auto& v) { j[key] = v; }, f.get(c));
  }
  return j;
}

void train_config_from_json(const nlohmann::json& j, ddp::TrainConfig& c) {
  for (const auto& f : ddp::train_config_fields()) {
    const std::string key(f.name);
    if (!j.contains(key)) continue;
    const nlohmann::json& v = j.at(key);
    ddp::ConfigValue value;
    switch (f.type) {
      case ddp::FieldType::Int:
        value = v.get<std::int64_t>();
        break;
      case ddp::FieldType::UInt:
        value = v.get<std::uint64_t>();
        break;
      case ddp::FieldType::Float32:
      case ddp::FieldType::MiB:
        value = v.get<double>();
        break;
      case ddp::FieldType::String:
        value = v.get<std::string>();
        break;
      case ddp::FieldType::Bool:
        value = v.get<bool>();
        break;
    }
    try {
      f.set(c, value);
    } catch (const core::UsageError& e) {
      MDDP_USAGE_CHECK(false, "config field '" << key << "': " << e.what());
    }
  }
}

}  // namespace microddp::perf
