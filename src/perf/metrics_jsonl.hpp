// metrics_jsonl.hpp — the machine-readable record of a run: one JSON object per step, then a
// summary object (JSON Lines). Later tools (analysis, sweeps) read this format.
//   {"type":"step","step":0,"loss":0.69,"step_ms":..,"data_ms":..,"forward_ms":..,"backward_ms":..,
//    "comm_total_ms":..,"comm_busy_ms":..,"comm_queued_ms":..,"comm_exposed_ms":..,"loss_sync_ms":..,
//    "optimizer_ms":..,"overlap":..,"collectives":34,"comm_bytes":..}
//   (step_stats.hpp defines them: comm_total_ms is launch -> completion summed, queueing included;
//   overlap is 1 - exposed / busy.)
//   {"type":"summary", "config":{...}, "median":{...}, "mean":{...}, "final_loss":.., ...}
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

#include "perf/step_stats.hpp"

namespace microddp::perf {

nlohmann::json to_json(const StepStats& s);

class MetricsWriter {
 public:
  MetricsWriter() = default;
  explicit MetricsWriter(const std::string& path);  // throws UsageError if it cannot be opened
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  bool enabled() const { return file_ != nullptr; }
  void write_step(const StepStats& s, double loss);
  void write(const nlohmann::json& object);  // one line

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace microddp::perf
