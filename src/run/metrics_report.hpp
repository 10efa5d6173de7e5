// metrics_report.hpp — `train --metrics FILE.jsonl` as a reporter: rank 0 writes one record per step,
// one per evaluation and the summary at the end (docs/training_recipes.md, "The metrics file"); the
// file is opened as run/metrics_log.hpp says (append or overwrite, a start or resume record first).
//
// Every rank holds one: the summary's peer_lag_ms is an all-reduce of every rank's arrival times
// (perf/peer_arrival.hpp), in before_end(). The steady-state means (peer lag, per-layer backward
// times with --layer-events) skip this run's first step.
#pragma once

#include <memory>
#include <string>

#include "nlohmann/json.hpp"
#include "perf/metrics_jsonl.hpp"
#include "perf/peer_arrival.hpp"
#include "run/run_reporter.hpp"

namespace microddp::run {

class MetricsReport final : public RunReporter {
 public:
  // Rank 0 opens `path` now (mode: append | overwrite).
  MetricsReport(const RunFacts& facts, const std::string& path, const std::string& mode);
  void on_step(const StepReport& step) override;
  void on_validation(const ValidationReport& v) override;
  void before_end(comm::Communicator& comm) override;
  void on_end(comm::Communicator& comm, const RunOutcome& outcome) override;

 private:
  nlohmann::json config_json() const;
  nlohmann::json run_json(const RunOutcome& o) const;
  nlohmann::json resources_json(const RunOutcome& o) const;

  const RunFacts& f_;
  std::unique_ptr<perf::MetricsWriter> writer_;  // rank 0's
  perf::LayerTimesMean layer_times_;             // steady state, with --layer-events
  perf::PeerArrival arrival_;                    // steady state, for peer_lag_ms
  double peer_lag_ms_ = 0.0;
};

}  // namespace microddp::run
