// trace_report.cpp — the trace's window per step, the merged file at the end.
#include "run/trace_report.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <utility>

namespace microddp::run {

TraceReport::TraceReport(const RunFacts& facts, const core::EventLog& log, std::string path, StepRange window)
    : f_(facts), log_(log), path_(std::move(path)), trace_(window, facts.start + 1, facts.config.steps, log.capacity()) {}

void TraceReport::on_step(const StepReport& step) { trace_.add(step.record.step + 1, step.events); }

void TraceReport::on_end(comm::Communicator& comm, const RunOutcome& outcome) {
  const ddp::TrainConfig& cfg = f_.config;
  write_trace(path_, comm, trace_.events(), f_.trainer.sync(), f_.trainer.model().params(),
              {{"command", "train"}, {"width", cfg.model.width}, {"depth", cfg.model.depth}});
  const StepRange& window = trace_.window();
  const std::int64_t from = std::max(window.first, f_.start + 1), to = std::min(window.last, outcome.end);
  if (f_.root()) {
    std::printf("# trace: %s, steps %" PRId64 "..%" PRId64 " (open in https://ui.perfetto.dev)\n", path_.c_str(), from,
                to);
  }
  const std::uint64_t dropped = log_.dropped() + trace_.dropped();
  if (f_.root() && dropped > 0) {
    std::printf("# warning: %llu events dropped (event log full)\n", static_cast<unsigned long long>(dropped));
  }
}

}  // namespace microddp::run
