// metrics_jsonl.hpp — the machine-readable record of a run: one JSON object per step, then a
// summary object (JSON Lines). Later tools (analysis, sweeps) read this format.
//   {"type":"step","step":1,"timestamp":"2026-11-24T21:55:33.123Z","samples_per_s":..,"loss":0.69,
//    "step_ms":..,"data_ms":..,"forward_ms":..,"backward_ms":..,"comm_total_ms":..,"comm_busy_ms":..,
//    "comm_queued_ms":..,"comm_exposed_ms":..,"loss_sync_ms":..,"optimizer_ms":..,"overlap":..,
//    "collectives":34,"comm_bytes":..}
//   (step_stats.hpp defines the times: comm_total_ms is launch -> completion summed, queueing
//   included; overlap is 1 - exposed / busy.) "step" is numbered as train prints it (1 = the first
//   step; a resumed run continues the count); "timestamp" is when the step ended (UTC, ms);
//   "samples_per_s" is the step's global samples (all micro-batches) over its time; "lr" the step's
//   learning rate; "grad_norm" the global gradient's L2 norm before clipping (non-finite: null).
//   {"type":"summary", "config":{...}, "median":{...}, "mean":{...}, "final_loss":.., ...}
// A file may hold several runs one after the other (train --metrics-mode append, run/metrics_log.hpp):
// each begins with a {"type":"start"} or {"type":"resume"} record.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <string>

#include "perf/step_stats.hpp"

namespace microddp::perf {

nlohmann::json to_json(const StepStats& s);
// "2026-11-24T21:55:33.123Z": ISO 8601, UTC, milliseconds.
std::string iso8601_utc(std::chrono::system_clock::time_point t);

class MetricsWriter {
 public:
  MetricsWriter() = default;
  // Truncates the file, or with `append` writes after what it holds; throws UsageError if it cannot
  // be opened.
  explicit MetricsWriter(const std::string& path, bool append = false);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  bool enabled() const { return file_ != nullptr; }
  // s.step is the trainer's (0-based) step; the line carries s.step + 1. epoch: the 1-based epoch
  // of a run that reads its data in epochs (train --data), written as "epoch"; 0 = none (no field).
  // lr: the step's learning rate; grad_norm: the synchronised gradient's L2 norm before clipping.
  void write_step(const StepStats& s, double loss, double samples_per_s, std::chrono::system_clock::time_point ended,
                  std::int64_t epoch, double lr, double grad_norm);
  void write(const nlohmann::json& object);  // one line
  void write_raw(const std::string& text);   // as it is (a newline to end a line a killed run left)

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace microddp::perf
