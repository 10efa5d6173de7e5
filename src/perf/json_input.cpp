// json_input.cpp — file reading and depth-limited JSON parsing (see json_input.hpp).
#include "perf/json_input.hpp"

#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace microddp::perf {

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  MDDP_USAGE_CHECK(in.good(), "cannot open " << what << " '" << path << "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json parse_json_limited(const std::string& text, const std::string& source) {
  bool too_deep = false;
  const nlohmann::json::parser_callback_t limit = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxJsonDepth) too_deep = true;
    return !too_deep;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, limit);
  } catch (const nlohmann::json::exception& e) {
    MDDP_USAGE_CHECK(false, "'" << source << "' is not valid JSON: " << e.what());
  }
  MDDP_USAGE_CHECK(!too_deep, "'" << source << "' nests JSON deeper than " << kMaxJsonDepth << " levels");
  return j;
}

}  // namespace microddp::perf
