// json_input.hpp — reading the JSON files a user hands to `analyze` (model files, benchmark output,
// run records) without trusting them: the whole file, or a parse that cannot overflow the stack.
// Contract: every failure (unreadable file, invalid JSON, nesting too deep) is a core::UsageError
// naming the file; nothing else is thrown.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace microddp::perf {

// The whole file as text; `what` names its kind in the error ("communication model").
std::string read_text_file(const std::string& path, const char* what);

// Deepest nesting accepted: far more than any file microddp writes (<= 5 levels), far less than
// the recursion depth that would overflow a stack ("[[[[..." in a fuzzed file).
inline constexpr int kMaxJsonDepth = 64;

// nlohmann::json::parse with the nesting limit; `source` names the input in the error.
nlohmann::json parse_json_limited(const std::string& text, const std::string& source);

}  // namespace microddp::perf
