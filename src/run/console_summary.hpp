// console_summary.hpp — the run's console summary on rank 0, after the last step: steps and losses,
// the median step's phases, the input pipeline, communication, memory, compression, the parameter
// checksum, the last validation and the best model, the divergence and desync checks.
#pragma once

#include "run/run_reporter.hpp"

namespace microddp::run {

class ConsoleSummary final : public RunReporter {
 public:
  // debug_sync: --debug-sync was given (the desync line says so).
  ConsoleSummary(const RunFacts& facts, bool debug_sync) : f_(facts), debug_sync_(debug_sync) {}
  void on_end(comm::Communicator& comm, const RunOutcome& outcome) override;

 private:
  void print_steps(const RunOutcome& o) const;
  void print_communication(const RunOutcome& o) const;
  void print_results(const RunOutcome& o) const;
  void print_checks(const comm::Communicator& comm, const RunOutcome& o) const;

  const RunFacts& f_;
  bool debug_sync_ = false;
};

}  // namespace microddp::run
