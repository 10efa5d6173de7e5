// trace_output.hpp — `--trace FILE.json` for commands that train: gathers every rank's events to
// rank 0 and writes the merged Chrome/Perfetto trace there (perf/chrome_trace.hpp); and
// `--trace-steps A:B`, the steps a trace keeps (TraceWindow).
// write_trace is collective: all ranks must call it at the same point.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"
#include "core/event_log.hpp"
#include "ddp/grad_sync.hpp"
#include "nlohmann/json.hpp"

namespace microddp::run {

void write_trace(const std::string& path, comm::Communicator& comm, const std::vector<core::Event>& events,
                 const ddp::GradSync& sync, const std::vector<model::ParamInfo>& params,
                 const nlohmann::json& metadata = nlohmann::json::object());

// Steps first..last (inclusive), numbered as `train` prints them (1 = the first step).
struct StepRange {
  std::int64_t first = 1;
  std::int64_t last = std::numeric_limits<std::int64_t>::max();
  bool contains(std::int64_t step) const { return step >= first && step <= last; }
};
// "A:B", "A:" (to the end), ":B" (from the start) or "N" (one step), 1 <= A <= B; nullopt otherwise.
std::optional<StepRange> parse_step_range(std::string_view text);

// The events a trace keeps: after each step the trainer's log holds that step's events (it keeps
// one step unless TrainConfig::keep_events); add() copies them when the step is in the window, into
// storage reserved once for the whole window (never more: what does not fit is counted, not
// stored), so a trace's memory is bounded by its window, not by the run's length.
class TraceWindow {
 public:
  // events_per_step: the trainer's log capacity; steps first_step..last_step run in this process.
  TraceWindow(StepRange window, std::int64_t first_step, std::int64_t last_step, std::size_t events_per_step);
  // step: as train prints it (the trainer's step + 1).
  void add(std::int64_t step, const std::vector<core::Event>& step_events);
  const std::vector<core::Event>& events() const { return events_; }
  std::uint64_t dropped() const { return dropped_; }
  const StepRange& window() const { return window_; }

 private:
  StepRange window_;
  std::vector<core::Event> events_;
  std::uint64_t dropped_ = 0;
};

}  // namespace microddp::run
