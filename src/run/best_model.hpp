// best_model.hpp — `train --save-best val_loss|val_accuracy` and `--early-stop-patience K`
// (`--early-stop-min-delta D`): which validation result is the best so far, and when to stop.
//
// After every evaluation observe() compares the monitored metric (--save-best's; val_loss when only
// early stopping is asked for) with the best so far: an improvement is a value better than the best
// by more than min_delta (lower loss, higher accuracy; min_delta 0: any strict improvement, and the
// first evaluation always is one). An improvement records (value, step) and resets the count of
// evaluations without one; `train` then writes best.h5 (with --save-best). When that count reaches
// the patience, should_stop() says so, and `train` stops cleanly after a final checkpoint (exit 0).
// Keras' EarlyStopping/ModelCheckpoint(save_best_only) and PyTorch Lightning's behave the same way.
//
// The state lives in the run record (io/run_info.hpp) that every checkpoint carries, so a resumed run
// continues the count and never replaces best.h5 with a worse model. Every rank computes the same
// decisions: the validation counts it observes are all-reduced (same bits on every rank).
#pragma once


#include <cstdint>
#include <string>

#include "io/run_info.hpp"

namespace microddp::run {

struct BestModelOptions {
  std::string save_best;          // "" | val_loss | val_accuracy
  std::int64_t patience = 0;      // 0: no early stopping
  double min_delta = 0.0;
};


class BestModel {
 public:
  explicit BestModel(const BestModelOptions& o);

  bool active() const { return !metric_.empty(); }
  bool saves_best() const { return saves_; }
  const std::string& metric() const { return metric_; }
  // Continues from a checkpoint's record (a record of another metric starts afresh; returns a note
  // saying so, else "").
  std::string restore(const io::RunInfo& r);
  // Writes the state into the record the next checkpoint carries.
  void store(io::RunInfo& r) const;

  // After the evaluation that followed `step`: true when it improved on the best.
  bool observe(double loss, double accuracy, std::int64_t step);
  bool should_stop() const { return patience_ > 0 && evals_since_best_ >= patience_; }
  // For the run's header: "best.h5 in DIR at each new best val_accuracy; early stop after 5
  // evaluations without an improvement (so far: val_accuracy 0.9 at step 2100)".
  std::string describe(const std::string& checkpoint_dir) const;
  // "val_accuracy 0.9030 at step 3780"
  std::string best_text() const;
  // Why should_stop(): "val_accuracy has not improved on 0.9030 (step 3780) by more than 0 in 5 evaluations".
  std::string stop_reason() const;
  bool have_best() const { return best_step_ > 0; }
  double best_value() const { return best_value_; }
  std::int64_t best_step() const { return best_step_; }

 private:
  std::string metric_;
  bool saves_ = false;
  std::int64_t patience_ = 0;
  double min_delta_ = 0.0;
  double best_value_ = 0.0;
  std::int64_t best_step_ = 0;  // 0: no evaluation yet
  std::int64_t evals_since_best_ = 0;
};

}  // namespace microddp::run
