// step_stats.hpp — per-step breakdown computed from the event log (the one source of timing truth).
//
//   step      wall time of the whole optimizer step
//   data, forward, backward, optimizer, loss_sync   phase durations
//   comm_total    sum over gradient collectives of (completion - launch): queueing included, so
//                 NOT a communication time (it can exceed the step); kept for run-record stability
//   comm_busy     union of the collectives' [start of execution, completion] (perf/comm_busy.hpp):
//                 wall time in which communication was executing; never more than the step
//   comm_queued   sum over collectives of (start of execution - launch): waiting in the FIFO
//   comm_exposed  time the trainer blocked in GradSync::finish() (communication not hidden)
//   overlap       1 - comm_exposed / comm_busy (0 when there was no communication)
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/event_log.hpp"
#include "perf/comm_busy.hpp"

namespace microddp::perf {

struct StepStats {
  std::int64_t step = 0;
  double step_ms = 0, data_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0, loss_sync_ms = 0;
  double comm_total_ms = 0, comm_exposed_ms = 0, comm_busy_ms = 0, comm_queued_ms = 0;
  std::int64_t collectives = 0;
  std::int64_t comm_bytes = 0;  // bytes handed to the gradient collectives (compressed, with compression)
  double compress_ms = 0;       // gradient compression's encode/decode work (0 without compression)
  // Clamped at 0: for blocking strategies exposed == busy up to the few ns between the two clock reads.
  double overlap() const { return overlap_fraction(comm_exposed_ms, comm_busy_ms); }
};

// Stats of one step from the events recorded for it.
StepStats step_stats(const std::vector<core::Event>& events, std::int64_t step);

// Per-layer backward times of one step, in backward execution order (last layer first), from the
// LayerBackward events (recorded when TrainConfig::layer_events is set; empty otherwise).
struct LayerTimes {
  std::vector<double> backward_ms;
  std::vector<int> layer_ids;
};
LayerTimes layer_backward_times(const std::vector<core::Event>& events, std::int64_t step);

// Running mean of LayerTimes over steps (the layer list of the first step added fixes the order).
class LayerTimesMean {
 public:
  void add(const LayerTimes& t);
  LayerTimes mean() const;

 private:
  LayerTimes sum_;
  std::int64_t count_ = 0;
};

// Summary over many steps: medians (robust to the noisy shared machine) and means.
struct RunSummary {
  std::int64_t steps = 0;
  StepStats median;  // field-wise median
  StepStats mean;    // field-wise mean
};
RunSummary summarize(const std::vector<StepStats>& steps);

}  // namespace microddp::perf
