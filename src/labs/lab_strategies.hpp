// lab_strategies.hpp — the seam through which a student's part of a strategy runs inside the real
// program: `--strategy lab` (lab 04: the whole naive synchronisation, lab_sync.hpp), `--strategy
// lab-overlap` (lab 05: the hooks, lab_hooks.hpp), `--strategy lab-bucketed` (lab 06: the bucket
// planner, lab_planner.hpp) and `--strategy lab-zero1` (lab 09: ZeRO stage 1, lab_zero1.hpp), in
// train, hooks, bench ddp and analyze. Everything around the student's part is production code, so
// the rest of the program (events, step statistics, overlap metric, traces, compression) works as
// with `naive`, `overlap`, `bucketed` and `flat --shard optimizer`.
//
// They are rows of the strategy table (ddp/strategy.hpp), registered the first time they are asked
// for: the program does so at start-up (register_labs.hpp), a grader when it first names one. Each
// row is modelled as the production strategy whose collectives it issues (lab-zero1 as `flat`: its
// reduce-scatter and all-gather move what flat's one all-reduce moves); none takes --shard (lab 09
// shards by itself: its row brings its own optimizer update), and labs 04 and 09 take no gradient
// compression.
#pragma once

#include "ddp/strategy.hpp"

namespace microddp::labs {

struct LabStrategies {
  ddp::Strategy naive_dp;  // `lab` (lab 04), modelled as naive
  ddp::Strategy overlap;   // `lab-overlap` (lab 05), modelled as overlap
  ddp::Strategy bucketed;  // `lab-bucketed` (lab 06), modelled as bucketed
  ddp::Strategy zero1;     // `lab-zero1` (lab 09), modelled as flat, with its own (sharded) update
};

// Registers the four rows once (the first call) and returns them.
const LabStrategies& lab_strategies();

}  // namespace microddp::labs
