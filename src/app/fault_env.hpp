// fault_env.hpp — the hidden test hooks of `microddp`: the MICRODDP_FAULT_* environment variables of
// the trainer, the checkpoint save and the communicator, parsed into one core::FaultPlan. This is the
// only place that reads them; the library gets the plan (ddp::TrainConfig::faults,
// io::SaveOptions::faults) and never calls getenv for them.
//
//   MICRODDP_FAULT_NAN=RANK:STEP[:input|grad]   ddp trainer_fault_point::kNanInput (default) or
//                                               kNanGradient, at 1-based step STEP
//   MICRODDP_FAULT_PERTURB=RANK:STEP[:PARAM]    kPerturbParameter, argument PARAM (default
//                                               layer_01.weight)
//   MICRODDP_FAULT_KILL_AT=POINT                io save point POINT (io::save_fault_points()), on
//     [MICRODDP_FAULT_KILL_RANK=R, default 0]   rank R, during save number N of the process
//     [MICRODDP_FAULT_KILL_SAVE=N, default 1]
//   MICRODDP_FAULT_TRUNCATE_DATA=RANK:STEP      app kTruncateDataPoint: after step STEP, rank RANK
//                                               truncates the --data file to half its size
//   MICRODDP_FAULT_EXIT=RANK:SEQ[:CODE]          comm_fault_point::kExit before collective SEQ, exit
//                                               code CODE in [0, 255] (default 3)
//   MICRODDP_FAULT_EXTRA_COLLECTIVE=RANK:SEQ     comm_fault_point::kExtraCollective as collective SEQ
// Documented in docs/reliability.md and docs/checkpoint_format.md; the communicator's points in
// comm/communicator.hpp (every command's communicators get them, not only train's).
//
// Contract: unset or empty variables arm nothing; a malformed value, an unknown save point or a
// negative rank is core::UsageError naming the variable (exit 2 before MPI starts).
#pragma once

#include "core/env_lookup.hpp"
#include "core/fault_plan.hpp"

namespace microddp::app {

// Reads one environment variable: nullptr when unset. The default is std::getenv; tests pass a map.
using core::EnvLookup;

core::FaultPlan fault_plan_from_env(const EnvLookup& env);
core::FaultPlan fault_plan_from_env();  // from this process's environment

}  // namespace microddp::app
