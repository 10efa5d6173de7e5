// lab_strategies.hpp — the seam through which a student's part of a strategy runs inside the real
// program: `--strategy lab` (lab 04: the whole naive synchronisation, lab_sync.hpp), `--strategy
// lab-overlap` (lab 05: the hooks, lab_hooks.hpp) and `--strategy lab-bucketed` (lab 06: the bucket
// planner, lab_planner.hpp), in train, hooks, bench ddp and analyze. Everything around the student's
// part is production code, so the rest of the program (events, step statistics, overlap metric,
// traces, compression) works as with `naive`, `overlap` and `bucketed`.
//
// They are rows of the strategy table (ddp/strategy.hpp), registered the first time they are asked
// for: the program does so at start-up (register_labs.hpp), a grader when it first names one. Each
// row is modelled as the production strategy whose collectives it issues; none shards, and lab 04
// takes no gradient compression.
#pragma once

#include "ddp/strategy.hpp"

namespace microddp::labs {

struct LabStrategies {
  ddp::Strategy naive_dp;  // `lab` (lab 04), modelled as naive
  ddp::Strategy overlap;   // `lab-overlap` (lab 05), modelled as overlap
  ddp::Strategy bucketed;  // `lab-bucketed` (lab 06), modelled as bucketed
};

// Registers the three rows once (the first call) and returns them.
const LabStrategies& lab_strategies();

}  // namespace microddp::labs
