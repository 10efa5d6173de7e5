// metrics_jsonl.cpp — JSON Lines writer for per-step metrics.
#include "perf/metrics_jsonl.hpp"

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace microddp::perf {

nlohmann::json to_json(const StepStats& s) {
  return nlohmann::json{{"step", s.step},
                        {"step_ms", s.step_ms},
                        {"data_ms", s.data_ms},
                        {"forward_ms", s.forward_ms},
                        {"backward_ms", s.backward_ms},
                        {"comm_total_ms", s.comm_total_ms},
                        {"comm_busy_ms", s.comm_busy_ms},
                        {"comm_queued_ms", s.comm_queued_ms},
                        {"comm_exposed_ms", s.comm_exposed_ms},
                        {"loss_sync_ms", s.loss_sync_ms},
                        {"optimizer_ms", s.optimizer_ms},
                        {"overlap", s.overlap()},
                        {"collectives", s.collectives},
                        {"comm_bytes", s.comm_bytes},
                        {"compress_ms", s.compress_ms}};
}

MetricsWriter::MetricsWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  MDDP_USAGE_CHECK(file_ != nullptr, "cannot open metrics file '" << path << "': " << std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

void MetricsWriter::write_step(const StepStats& s, double loss) {
  nlohmann::json j = to_json(s);
  j["type"] = "step";
  j["loss"] = loss;
  write(j);
}

void MetricsWriter::write(const nlohmann::json& object) {
  if (!file_) return;
  const std::string line = object.dump() + "\n";
  MDDP_CHECK(std::fwrite(line.data(), 1, line.size(), file_) == line.size(), "write to '" << path_ << "' failed");
  std::fflush(file_);
}

}  // namespace microddp::perf
