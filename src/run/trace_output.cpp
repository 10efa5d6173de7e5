// trace_output.cpp — gather, label and write the trace.
#include "run/trace_output.hpp"

#include <algorithm>
#include <charconv>

#include "perf/chrome_trace.hpp"

namespace microddp::run {

void write_trace(const std::string& path, comm::Communicator& comm, const std::vector<core::Event>& events,
                 const ddp::GradSync& sync, const std::vector<model::ParamInfo>& params,
                 const nlohmann::json& metadata) {
  const auto ranks = perf::gather_events(comm, events);
  if (comm.rank() != 0) return;
  perf::TraceLabels labels;
  labels.collective = [&sync](int id) { return sync.collective_label(id); };
  labels.param = [&params](int id) {
    return id >= 0 && static_cast<std::size_t>(id) < params.size() ? params[static_cast<std::size_t>(id)].name
                                                                   : std::to_string(id);
  };
  nlohmann::json meta = metadata;
  meta["strategy"] = std::string(sync.name());
  meta["ranks"] = comm.size();
  perf::write_json_file(path, perf::chrome_trace(ranks, labels, meta));
}

namespace {

// A step number >= 1, the whole of `text`.
std::optional<std::int64_t> parse_step(std::string_view text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1) return std::nullopt;
  return v;
}

}  // namespace

std::optional<StepRange> parse_step_range(std::string_view text) {
  const std::size_t colon = text.find(':');
  StepRange r;
  if (colon == std::string_view::npos) {
    const auto n = parse_step(text);
    if (!n) return std::nullopt;
    r.first = r.last = *n;
    return r;
  }
  const std::string_view a = text.substr(0, colon), b = text.substr(colon + 1);
  if (a.empty() && b.empty()) return std::nullopt;
  if (!a.empty()) {
    const auto n = parse_step(a);
    if (!n) return std::nullopt;
    r.first = *n;
  }
  if (!b.empty()) {
    const auto n = parse_step(b);
    if (!n) return std::nullopt;
    r.last = *n;
  }
  if (r.first > r.last) return std::nullopt;
  return r;
}

TraceWindow::TraceWindow(StepRange window, std::int64_t first_step, std::int64_t last_step, std::size_t events_per_step)
    : window_(window) {
  const std::int64_t from = std::max(window.first, first_step), to = std::min(window.last, last_step);
  if (to >= from) events_.reserve(events_per_step * static_cast<std::size_t>(to - from + 1));
}

void TraceWindow::add(std::int64_t step, const std::vector<core::Event>& step_events) {
  if (!window_.contains(step)) return;
  for (const core::Event& e : step_events) {
    if (events_.size() < events_.capacity()) {
      events_.push_back(e);
    } else {
      ++dropped_;
    }
  }
}

}  // namespace microddp::run
