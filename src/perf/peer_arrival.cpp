// peer_arrival.cpp — arrival times at the end of backward and the lag behind the slowest rank.
#include "perf/peer_arrival.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/tensor_view.hpp"

namespace microddp::perf {

void PeerArrival::add(const std::vector<core::Event>& events, std::int64_t step, bool keep) {
  std::int64_t backward_end = -1, sync_end = -1;
  for (const core::Event& e : events) {
    if (e.step != step) continue;
    if (e.kind == core::EventKind::Backward) backward_end = std::max(backward_end, e.end_ns);
    if (e.kind == core::EventKind::LossSync) sync_end = std::max(sync_end, e.end_ns);
  }
  // Whether a step is kept must not depend on its events (a full event log drops them, and not
  // necessarily at the same step on every rank): every rank keeps the same steps, and a step whose
  // events are missing is kept as "unknown" (-1), which the max over ranks and the mean skip.
  if (keep && seen_a_step_) {
    const bool known = backward_end >= 0 && last_sync_end_ns_ >= 0;
    arrival_ms_.push_back(known ? static_cast<double>(backward_end - last_sync_end_ns_) * 1e-6 : -1.0);
  }
  seen_a_step_ = true;
  last_sync_end_ns_ = sync_end;
}

double mean_lag_ms(const std::vector<double>& own_ms, const std::vector<double>& latest_ms) {
  MDDP_CHECK(own_ms.size() == latest_ms.size(),
             "peer arrival: " << own_ms.size() << " arrivals vs " << latest_ms.size() << " maxima");
  double sum = 0.0;
  std::int64_t known = 0;
  for (std::size_t k = 0; k < own_ms.size(); ++k) {
    if (own_ms[k] < 0.0) continue;  // unknown on this rank (then latest is some other rank's, or -1)
    sum += std::max(0.0, latest_ms[k] - own_ms[k]);
    ++known;
  }
  return known > 0 ? sum / static_cast<double>(known) : 0.0;
}

double PeerArrival::mean_lag_ms(comm::Communicator& comm) const {
  if (arrival_ms_.empty()) return 0.0;
  std::vector<double> latest = arrival_ms_;
  comm.all_reduce(core::TensorView::of(latest.data(), static_cast<std::int64_t>(latest.size())), comm::ReduceOp::Max);
  return perf::mean_lag_ms(arrival_ms_, latest);
}

}  // namespace microddp::perf
