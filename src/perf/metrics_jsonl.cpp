// metrics_jsonl.cpp — JSON Lines writer for per-step metrics.
#include "perf/metrics_jsonl.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>

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

MetricsWriter::MetricsWriter(const std::string& path, bool append) : path_(path) {
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  MDDP_USAGE_CHECK(file_ != nullptr, "cannot open metrics file '" << path << "': " << std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char buf[40];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

void MetricsWriter::write_step(const StepStats& s, double loss, double samples_per_s,
                               std::chrono::system_clock::time_point ended, std::int64_t epoch, double lr,
                               double grad_norm) {
  nlohmann::json j = to_json(s);
  j["type"] = "step";
  j["step"] = s.step + 1;  // as train prints it
  j["timestamp"] = iso8601_utc(ended);
  j["samples_per_s"] = samples_per_s;
  j["loss"] = loss;
  if (epoch > 0) j["epoch"] = epoch;
  j["lr"] = lr;
  j["grad_norm"] = grad_norm;  // nlohmann writes a non-finite double as null
  write(j);
}

void MetricsWriter::write(const nlohmann::json& object) { write_raw(object.dump() + "\n"); }

void MetricsWriter::write_raw(const std::string& text) {
  if (!file_) return;
  MDDP_CHECK(std::fwrite(text.data(), 1, text.size(), file_) == text.size(), "write to '" << path_ << "' failed");
  std::fflush(file_);
}

}  // namespace microddp::perf
