// comm_busy.hpp — how long communication was really busy in a step, and how much of it was hidden.
//
// A gradient collective's life: launch (the strategy hands it over) -> start (the communication
// thread picks it up / the stream reaches it, i.e. every collective ahead of it in the FIFO has
// completed) -> completion. Per step:
//   queued  = Σ (start - launch)          waiting behind earlier collectives: no communication
//   busy    = |∪ [start, completion]|     time in which at least one collective was executing
//   overlap = 1 - exposed / busy          exposed: time the trainer blocked waiting (CommWait)
// Why the union of execution intervals and not Σ (completion - launch): with one async collective
// per parameter, each one's launch -> completion also covers its wait behind all earlier ones, so
// the sum counts the same instants many times (a 365 ms step showed 2,900 ms of "comm"), and
// 1 - exposed / sum stayed high (82 %) even when every collective completed after backward ended.
// The union is contained in [first start, last completion], so busy never exceeds the step that
// contains the collectives. A collective blocked inside MPI waiting for a late peer counts as busy:
// from one rank's view that is indistinguishable from transferring.
#pragma once

#include <cstdint>
#include <vector>

namespace microddp::perf {

struct Interval {
  std::int64_t begin_ns = 0, end_ns = 0;
};

// Length of the union of `intervals`, in ns; empty or reversed intervals contribute nothing.
// Takes a copy because it sorts it.
std::int64_t union_length_ns(std::vector<Interval> intervals);

// 1 - exposed / busy in [0, 1]; 0 when busy <= 0. Clamped at 0: exposed also covers the loop around
// the waits (µs) and compression's decode, which are not collective execution.
double overlap_fraction(double exposed, double busy);

}  // namespace microddp::perf
