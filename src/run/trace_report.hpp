// trace_report.hpp — `train --trace FILE.json` as a reporter: keeps the events of the steps in
// --trace-steps (TraceWindow), and at the end gathers every rank's to rank 0, which writes the
// Chrome/Perfetto trace (run/trace_output.hpp) and says where it is.
#pragma once

#include <string>

#include "run/run_reporter.hpp"
#include "run/trace_output.hpp"

namespace microddp::run {

class TraceReport final : public RunReporter {
 public:
  // log: the trainer's event log (its capacity sizes the window's storage; its drops are reported).
  TraceReport(const RunFacts& facts, const core::EventLog& log, std::string path, StepRange window);
  void on_step(const StepReport& step) override;
  void on_end(comm::Communicator& comm, const RunOutcome& outcome) override;

 private:
  const RunFacts& f_;
  const core::EventLog& log_;
  std::string path_;
  TraceWindow trace_;
};

}  // namespace microddp::run
