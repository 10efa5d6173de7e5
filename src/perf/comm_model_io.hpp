// comm_model_io.hpp — the fitted communication model as a file: the JSON `analyze --fit --fit-out`
// writes and `analyze --model` reads (type "microddp_comm_model", version 1).
// Contract: reading is hardened (fuzzed: tests/fuzz/fuzz_comm_model.cpp): any malformed input is a
// core::UsageError naming the file, and a model that is read has finite, non-negative coefficients
// and size regimes ascending from 0 bytes.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/alpha_beta.hpp"

namespace microddp::perf {

nlohmann::json to_json(const CommModel& m);
nlohmann::json regimes_json(const std::vector<SizeRegime>& regimes);  // [{from_bytes, alpha_us, beta_ns_per_byte}]
CommModel comm_model_from_json(const nlohmann::json& j);
// The text of a model file; `source` names it in errors. Any malformed input (not JSON, nesting
// deeper than 64, missing or mistyped fields, non-finite or negative coefficients) throws
// core::UsageError and nothing else (fuzzed: tests/fuzz/fuzz_comm_model.cpp).
CommModel parse_comm_model(const std::string& text, const std::string& source);
CommModel load_comm_model(const std::string& path);
void save_comm_model(const CommModel& m, const std::string& path);

}  // namespace microddp::perf
