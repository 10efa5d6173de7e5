// metrics_log.hpp — where `train --metrics FILE` writes, and how a run's records follow the ones
// already in the file (--metrics-mode; docs/training_recipes.md, "The metrics file"):
//
//   append (the default)  the run writes after what the file holds: nothing is ever truncated. It
//                         opens its records with one line
//                           {"type":"start","run_id":"...","timestamp":"..."}             a fresh run
//                           {"type":"resume","run_id":"...","step":284,"superseded_steps":6,...}
//                         A resume continues after checkpoint step S, so the interrupted run's
//                         step and validation records with a step > S were computed again after it:
//                         the resume record marks them (superseded_steps counts the step records);
//                         a reader keeps, for each step, the record after the last resume that
//                         covers it (jobs/plot_metrics.py does).
//   overwrite             the file is truncated first (the old behaviour), then the same records.
// A run with nothing to do (its checkpoint is at the end) does not open the file at all. A file that
// ends inside a line (a run killed while writing) gets a newline first, so every record the run
// writes is a line of its own (readers skip the broken one).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "io/run_info.hpp"
#include "perf/metrics_jsonl.hpp"

namespace microddp::run {

// Rank 0 calls it. resumed: the run continues after checkpoint step `start`.
std::unique_ptr<perf::MetricsWriter> open_metrics_log(const std::string& path, const std::string& mode,
                                                      const io::RunInfo& run, bool resumed, std::int64_t start);

// The step records in `path` (a JSONL file; missing: none) with "step" > `after`, since its last
// "start" record.
std::int64_t count_step_records_after(const std::string& path, std::int64_t after);

}  // namespace microddp::run
