// run_info.hpp — what a checkpoint records about the run it belongs to, beside its configuration
// and progress (root attributes from checkpoint format version 2 on; docs/checkpoint_format.md):
//
//   run_id            the run's identity: drawn at random when a run starts from step 0, carried by
//                     every resume (also one with --allow-changed). Rotation (--keep) deletes only
//                     checkpoints of this identity, and a run refuses a directory that holds another's.
//   plan_history      the run's plan changes, one line each: "step 300: lr 0.001 -> 0.0005" (a resume
//                     with --allow-changed), "step 0: weights from FILE" (--init-from)
//   best_metric, best_value, best_step, evals_since_best
//                     the --save-best / --early-stop-patience state: the best validation value so
//                     far, the step it was reached at (0: none yet) and the evaluations since
//   stopped_early     the run ended by early stopping: a resume has nothing left to do
//
// A format-1 checkpoint has none of these; its identity is "v1-" and a digest of its resume settings
// and data source, and a run resumed from it keeps that identity (so its rotation still recognises
// the format-1 checkpoints of the same run).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

namespace microddp::io {

struct RunInfo {
  std::string run_id;
  std::string plan_history;  // '\n'-separated lines
  std::string best_metric;   // "" (no --save-best / early stopping), "val_loss" or "val_accuracy"
  double best_value = 0.0;
  std::int64_t best_step = 0;
  std::int64_t evals_since_best = 0;
  bool stopped_early = false;

  // Appends one line to plan_history.
  void add_history(const std::string& line) { plan_history += (plan_history.empty() ? "" : "\n") + line; }
};

// 16 hex digits from the host name, the process id and the clocks: distinct for every run started.
std::string new_run_id();
// Collective: every rank gets rank 0's record.
void broadcast_run_info(MPI_Comm comm, RunInfo& r);

}  // namespace microddp::io
