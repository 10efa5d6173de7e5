// peer_arrival.hpp — how much later than this rank the slowest rank finishes its backward pass.
//
// A gradient all-reduce can complete only when the LAST rank has contributed. The step model
// (step_model.hpp) takes its compute times from one rank; if another rank is slower in a step —
// a straggler, or on an oversubscribed node a rank the scheduler has just taken off the CPU — the
// all-reduce waits for it, and that wait shows up as exposed communication on the faster rank.
// This class measures that wait so the model can include it, the same way it includes measured
// compute (an input, not a fitted parameter).
//
// Per step k each rank records its ARRIVAL: the time from the end of the previous step's last
// synchronising collective (the loss all-reduce, which every rank leaves at about the same moment)
// to the end of this step's backward pass (its last micro-step's backward). Per step the lag is
// max over ranks of the arrival minus this rank's arrival; mean_lag_ms() averages it over the kept
// steps. Durations on each rank's own clock, so no clock synchronisation between nodes is needed.
// The max over ranks is one all-reduce of all kept steps at the end, not one per step: measuring
// must not add a collective to the steps it measures.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "core/event_log.hpp"

namespace microddp::perf {

class PeerArrival {
 public:
  // After every step, with that step's events. keep = false: the step only serves as the
  // reference for the next one (warm-up). The first step added is never kept (no predecessor). A
  // kept step whose events are missing (a full event log) is kept as unknown (-1) and skipped.
  void add(const std::vector<core::Event>& events, std::int64_t step, bool keep);

  std::int64_t kept() const { return static_cast<std::int64_t>(arrival_ms_.size()); }
  const std::vector<double>& arrivals_ms() const { return arrival_ms_; }

  // Collective: every rank calls it after the same steps (kept() agrees by construction: warm-up
  // and run length are part of the agreed configuration). Mean over kept steps of (latest arrival
  // over ranks - own arrival), ms; 0 if nothing was kept.
  double mean_lag_ms(comm::Communicator& comm) const;

 private:
  std::vector<double> arrival_ms_;      // per kept step; -1: unknown
  std::int64_t last_sync_end_ns_ = -1;  // end of the previous step's loss all-reduce; -1: unknown
  bool seen_a_step_ = false;
};

// The lag from the arrivals of one rank and the per-step maxima over ranks (same length); steps
// unknown on this rank (< 0) are skipped.
double mean_lag_ms(const std::vector<double>& own_ms, const std::vector<double>& latest_ms);

}  // namespace microddp::perf
