// metrics_log.cpp — the start/resume record and the count of superseded steps.
#include "run/metrics_log.hpp"

#include <chrono>
#include <fstream>

namespace microddp::run {

std::int64_t count_step_records_after(const std::string& path, std::int64_t after) {
  std::ifstream in(path);
  std::int64_t n = 0;
  std::string line;
  while (std::getline(in, line)) {
    // Only our own lines are read, but the file is the user's: a line that is not JSON counts nothing.
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    const std::string type = j.value("type", "");
    if (type == "start") n = 0;
    if (type == "step" && j.contains("step") && j["step"].is_number_integer() && j["step"].get<std::int64_t>() > after)
      ++n;
  }
  return n;
}

std::unique_ptr<perf::MetricsWriter> open_metrics_log(const std::string& path, const std::string& mode,
                                                      const io::RunInfo& run, bool resumed, std::int64_t start) {
  const bool append = mode != "overwrite";
  const std::int64_t superseded = resumed && append ? count_step_records_after(path, start) : 0;
  // A run killed while writing may have left half a line: ours start on a line of their own.
  bool partial_line = false;
  if (append) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (in && in.tellg() > 0) {
      in.seekg(-1, std::ios::end);
      partial_line = in.get() != '\n';
    }
  }
  auto w = std::make_unique<perf::MetricsWriter>(path, append);
  if (partial_line) w->write_raw("\n");
  nlohmann::json j{{"type", resumed ? "resume" : "start"},
                   {"run_id", run.run_id},
                   {"timestamp", perf::iso8601_utc(std::chrono::system_clock::now())}};
  if (resumed) {
    j["step"] = start;
    j["superseded_steps"] = superseded;
  }
  w->write(j);
  return w;
}

}  // namespace microddp::run
