// console_table.hpp — the run's console output before and during the steps, on rank 0: the header
// (configuration, ranks, backend, threads), one line per logged step (step, loss, step time,
// samples/s, communication, overlap, eta; the epoch with --data, the lr with a schedule), the
// validation results and the early stop.
#pragma once

#include <string>

#include "run/run_reporter.hpp"

namespace microddp::run {

// Overlap of communication with compute as the table prints it: with one rank nothing is
// communicated, so there is none to speak of (its "collectives" are local copies): "n/a".
std::string overlap_text(bool single_rank, double fraction);

class ConsoleTable final : public RunReporter {
 public:
  // best_note: why the best-model record starts afresh (BestModel::restore), or "".
  ConsoleTable(const RunFacts& facts, std::string best_note);
  void on_start() override;
  void on_step(const StepReport& step) override;
  void on_validation(const ValidationReport& v) override;
  void on_early_stop(std::int64_t step, const std::string& reason) override;

 private:
  void print_model_and_data() const;
  void print_training() const;
  void print_compute() const;

  const RunFacts& f_;
  std::string best_note_;
};

}  // namespace microddp::run
