// step_stats.cpp — phase sums per step, medians and means over steps.
#include "perf/step_stats.hpp"

#include <algorithm>
#include <utility>

namespace microddp::perf {

StepStats step_stats(const std::vector<core::Event>& events, std::int64_t step) {
  StepStats s;
  s.step = step;
  std::vector<Interval> executing;  // this step's CollectiveExec intervals (their union is busy time)
  double exec_sum_ms = 0;
  Interval window{0, 0};  // the step's own interval, when its Step event is there
  for (const core::Event& e : events) {
    if (e.step != step) continue;
    const double ms = static_cast<double>(e.end_ns - e.begin_ns) * 1e-6;
    switch (e.kind) {
      case core::EventKind::Step:
        s.step_ms += ms;
        window = {e.begin_ns, e.end_ns};
        break;
      case core::EventKind::Data:
        s.data_ms += ms;
        break;
      case core::EventKind::Forward:
        s.forward_ms += ms;
        break;
      case core::EventKind::Backward:
        s.backward_ms += ms;
        break;
      case core::EventKind::Optimizer:
        s.optimizer_ms += ms;
        break;
      case core::EventKind::LossSync:
        s.loss_sync_ms += ms;
        break;
      case core::EventKind::CommWait:
        s.comm_exposed_ms += ms;
        break;
      case core::EventKind::Compress:
        s.compress_ms += ms;
        break;
      case core::EventKind::Collective:
        s.comm_total_ms += ms;
        s.collectives += 1;
        s.comm_bytes += e.bytes;
        break;
      case core::EventKind::CollectiveExec:
        executing.push_back({e.begin_ns, e.end_ns});
        exec_sum_ms += ms;
        break;
      default:
        break;
    }
  }
  // Busy time of THIS step: a collective recorded here may have started executing before the step
  // began (ZeRO's parameter all-gathers run from the previous update into this step's forward, which
  // waits for them; zero_sync.hpp), and the part before the step is not this step's.
  if (window.end_ns > window.begin_ns) {
    for (Interval& iv : executing) {
      iv.begin_ns = std::max(iv.begin_ns, window.begin_ns);
      iv.end_ns = std::min(iv.end_ns, window.end_ns);
    }
  }
  s.comm_busy_ms = static_cast<double>(union_length_ns(std::move(executing))) * 1e-6;
  // Each CollectiveExec ends where its Collective ends, so Σ(start - launch) = Σ(total) - Σ(exec).
  s.comm_queued_ms = std::max(0.0, s.comm_total_ms - exec_sum_ms);
  return s;
}

namespace {
template <typename Get>
double median_of(const std::vector<StepStats>& v, Get get) {
  std::vector<double> x;
  x.reserve(v.size());
  for (const auto& s : v) x.push_back(get(s));
  if (x.empty()) return 0.0;
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}
template <typename Get>
double mean_of(const std::vector<StepStats>& v, Get get) {
  double sum = 0.0;
  for (const auto& s : v) sum += get(s);
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}
}  // namespace

RunSummary summarize(const std::vector<StepStats>& steps) {
  RunSummary r;
  r.steps = static_cast<std::int64_t>(steps.size());
#define MDDP_FIELD(f)                                                    \
  r.median.f = median_of(steps, [](const StepStats& s) { return s.f; }); \
  r.mean.f = mean_of(steps, [](const StepStats& s) { return s.f; });
  MDDP_FIELD(step_ms)
  MDDP_FIELD(data_ms)
  MDDP_FIELD(forward_ms)
  MDDP_FIELD(backward_ms)
  MDDP_FIELD(optimizer_ms)
  MDDP_FIELD(loss_sync_ms)
  MDDP_FIELD(comm_total_ms)
  MDDP_FIELD(comm_exposed_ms)
  MDDP_FIELD(comm_busy_ms)
  MDDP_FIELD(comm_queued_ms)
  MDDP_FIELD(compress_ms)
#undef MDDP_FIELD
  if (!steps.empty()) {
    r.median.collectives = r.mean.collectives = steps.back().collectives;
    r.median.comm_bytes = r.mean.comm_bytes = steps.back().comm_bytes;
  }
  return r;
}

LayerTimes layer_backward_times(const std::vector<core::Event>& events, std::int64_t step) {
  LayerTimes t;
  for (const core::Event& e : events) {
    if (e.step != step || e.kind != core::EventKind::LayerBackward) continue;
    t.backward_ms.push_back(static_cast<double>(e.end_ns - e.begin_ns) * 1e-6);
    t.layer_ids.push_back(e.id);
  }
  return t;
}

void LayerTimesMean::add(const LayerTimes& t) {
  if (count_ == 0) {
    sum_.layer_ids = t.layer_ids;
    sum_.backward_ms.assign(t.backward_ms.size(), 0.0);
  }
  for (std::size_t l = 0; l < t.backward_ms.size() && l < sum_.backward_ms.size(); ++l)
    sum_.backward_ms[l] += t.backward_ms[l];
  ++count_;
}

LayerTimes LayerTimesMean::mean() const {
  LayerTimes m = sum_;
  for (double& x : m.backward_ms) x /= static_cast<double>(std::max<std::int64_t>(1, count_));
  return m;
}

}  // namespace microddp::perf
