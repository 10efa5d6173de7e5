// config_json.hpp — the training configuration in the JSON records: the "config" object of the
// `train --metrics` summary (metrics_jsonl.hpp) and of run records (analysis.hpp). One key per
// field of ddp::train_config_fields(), with the field's name: integers and the seed as JSON
// integers, float32 settings and MiB sizes as numbers, names as strings, booleans as booleans.
// The records add the run's facts (ranks, threads, backend, device, ...) under their own keys.
#pragma once

#include <nlohmann/json.hpp>

#include "ddp/train_config.hpp"

namespace microddp::perf {

nlohmann::json train_config_to_json(const ddp::TrainConfig& c);
// Sets every field whose key `j` has; the others keep their value in `c` (records written before a
// field existed). A value of the wrong JSON type throws nlohmann::json::exception (the record
// readers turn it into a UsageError naming the file); an invalid one (an unknown NaN policy)
// throws core::UsageError naming the field.
void train_config_from_json(const nlohmann::json& j, ddp::TrainConfig& c);

}  // namespace microddp::perf
