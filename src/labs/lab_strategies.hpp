// lab_strategies.hpp — the seam through which a student's part of a strategy runs inside the real
// program: `--strategy lab` (lab 04: the whole naive synchronisation, lab_sync.hpp), `--strategy lab-overlap` (lab 05: the hooks, lab_hooks.hpp) and `--strategy lab-bucketed`
// (lab 06: the bucket planner, lab_planner.hpp), in train, hooks, bench ddp and analyze.
// Everything around the student's part is production code, so the rest of the program (events,
// step statistics, overlap metric, traces, compression) works as with `overlap` and `bucketed`.
#pragma once

#include <memory>
#include <vector>

#include "ddp/grad_sync.hpp"

namespace microddp::labs {

// For ddp::set_lab_sync_maker (the program installs it; ddp/grad_sync.hpp).
std::unique_ptr<ddp::GradSync> make_lab_strategy(ddp::Strategy strategy, comm::Communicator& comm,
                                                 const std::vector<model::ParamInfo>& params, core::TensorView grads,
                                                 core::EventLog& events, const ddp::GradSyncOptions& options);

}  // namespace microddp::labs
