// step_model.hpp — predicts a training step's time per gradient-synchronisation strategy, the best
// bucket size, and strong/weak scaling, from measured compute and an α-β communication model.
//
// Inputs: a StepProfile — one rank's measured phase times and per-layer backward times (in the
// order backward runs them) plus the gradients in gradient-ready order — and an all-reduce cost
// function T(bytes) for the rank count being predicted.
//
// The schedule (docs/performance.md "Predicting a step"):
//   naive     every parameter all-reduced one after the other after backward: exposed = Σ T(S_p)
//   flat      one all-reduce of all gradients after backward:                 exposed = T(Σ S_p)
//   overlap   one async all-reduce per parameter, launched when it is ready
//   bucketed  one async all-reduce per bucket (ddp::plan_buckets), launched when its LAST gradient
//             is ready
//   For async strategies the collectives run one at a time on the communication thread, so
//       start_b = max(ready_b + lag, end_{b-1}),  end_b = start_b + T(S_b),
//       exposed = max(0, end_last - backward_end),
//   where lag (peer_lag_s) is how much later the slowest rank gets there. On a shaped link (burst
//   credit, AllReduceTime::streamed) T depends on what came before: the collectives of a busy period
//   stream as one transfer, T(S_b) becomes T(C + S_b) - T(C) with C the bytes the period streamed
//   so far; an idle gap of g seconds refills the bucket at about the rate it drained, so it takes
//   the fraction g / T(C) off C (all of it when g >= T(C)); the step's first collective starts on
//   an idle link (forward and the optimizer ran meanwhile). naive and flat pay lag once
//   (exposed = lag + Σ T). On a time-sliced node (time_sliced) ready_b is at least backward_end:
//   every collective runs after backward, exposed = lag + Σ T(S_b) for every strategy.
//   step = data + forward + backward + exposed + loss_sync + optimizer (+ measured untimed rest).
// Within a layer's backward (model/mlp.cpp) the bias gradient is ready at its start, the weight's
// after the dW GEMM, i.e. half-way (dW and dX GEMMs have equal FLOPs; layer 0 has no dX).
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>
#include <string>
#include <vector>

#include "ddp/strategy.hpp"
#include "model/mlp.hpp"

namespace microddp::perf {

struct StepProfile {
  double data_s = 0, forward_s = 0, backward_s = 0, optimizer_s = 0, loss_sync_s = 0;
  double other_s = 0;  // step - sum of the timed phases (gaps between events)
  // Backward of each layer in execution order (index 0 runs first = the output layer); their sum
  // is <= backward_s (the loss gradient is computed outside the per-layer events).
  std::vector<double> layer_backward_s;
  std::vector<int> layer_ids;            // the model layer of each entry above
  std::vector<model::ParamInfo> params;  // gradient-ready order
  std::int64_t rows_per_rank = 0;        // local batch the compute was measured at
  // Mean per step of how much later than this rank the slowest rank finished backward
  // (perf::PeerArrival): no all-reduce can complete before the last rank is ready.
  double peer_lag_s = 0;
  // The node's ranks time-slice its cores (ranks per node x threads > cores): a collective needs
  // all its ranks running at once, which a busy time-sliced node grants only after backward, so
  // no collective overlaps backward.
  bool time_sliced = false;
  // Gradient compression (docs/compression.md), as measured: bytes on the wire / fp32 bytes (every
  // collective's bytes are scaled by it: exact for fp16/bf16, an average over tensors for PowerSGD,
  // whose second collective's latency is not modelled), and the encode/decode work per step, added
  // to the step (the host time of the Compress event; the part an async strategy runs inside
  // backward is then counted twice: an upper bound).
  double wire_ratio = 1.0;
  double compress_s = 0;
  double compute_s() const { return data_s + forward_s + backward_s + optimizer_s; }
};

// Backward start -> time gradient p is ready (s), for each parameter in gradient-ready order.
std::vector<double> grad_ready_times(const StepProfile& p);

// If no per-layer times were recorded: split backward_s over the layers in proportion to their
// parameter counts (their GEMM FLOPs are proportional to parameters × rows).
void fill_layer_times_from_params(StepProfile& p);

// The time of one gradient all-reduce of `bytes` for the rank count being predicted, in two cases:
// the collective starts on an idle link (operator()), or it continues a busy period that has
// already streamed `before` bytes (streamed). They differ only on a shaped link with burst credit
// (alpha_beta.hpp SizeRegime, analyze --burst-credit idle), where a busy period is one long transfer
// through the token bucket: streamed = T(before + bytes) - T(before). Built from one function,
// streamed is that function of `bytes` (every collective gets its measured time).
class AllReduceTime {
 public:
  using Fn = std::function<double(double bytes)>;
  using StreamFn = std::function<double(double bytes, double before)>;
  AllReduceTime() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, AllReduceTime> &&
                                              std::is_invocable_r_v<double, F&, double>>>
  AllReduceTime(F isolated)  // NOLINT: implicit on purpose
      : isolated_(isolated), streamed_([f = std::move(isolated)](double bytes, double) { return f(bytes); }) {}
  AllReduceTime(Fn isolated, StreamFn streamed) : isolated_(std::move(isolated)), streamed_(std::move(streamed)) {}
  double operator()(double bytes) const { return isolated_(bytes); }
  double streamed(double bytes, double before) const { return streamed_(bytes, before); }

 private:
  Fn isolated_;
  StreamFn streamed_;
};

struct BucketTiming {
  double bytes = 0, ready_s = 0, start_s = 0, end_s = 0;  // times from backward start
};

struct StepPrediction {
  ddp::Strategy strategy = ddp::Strategy::Naive;
  double bucket_bytes = 0;  // bucketed: the cap used
  double step_s = 0;
  double exposed_comm_s = 0;
  double comm_total_s = 0;  // Σ T(S_b)
  std::int64_t collectives = 0;
  double overlap() const { return comm_total_s > 0 ? 1.0 - exposed_comm_s / comm_total_s : 0.0; }
  std::vector<BucketTiming> buckets;
};

// Bucket caps in bytes (bucketed only; first 0 = same as the cap).
StepPrediction predict_step(const StepProfile& prof, ddp::Strategy strategy, const AllReduceTime& allreduce,
                            double bucket_cap_bytes = 25.0 * (1 << 20), double first_bucket_cap_bytes = 0);

// Bucket caps tried: powers of two from 64 KiB up to the whole gradient (plus the total), each
// predicted (bucket_sweep, ascending caps). best_bucket returns the one with the smallest step
// time (ties within 0.1%: the larger bucket, fewer collectives).
std::vector<StepPrediction> bucket_sweep(const StepProfile& prof, const AllReduceTime& allreduce);
StepPrediction best_bucket(const std::vector<StepPrediction>& sweep);
inline StepPrediction best_bucket(const StepProfile& prof, const AllReduceTime& allreduce) {
  return best_bucket(bucket_sweep(prof, allreduce));
}

// ---- scaling ----
struct ScalingPoint {
  int ranks = 0;
  std::int64_t rows_per_rank = 0;
  double step_s = 0;      // predicted
  double comm_s = 0;      // exposed
  double efficiency = 0;  // strong: T1 / (n·Tn); weak: T1 / Tn
  double samples_per_s = 0;
};

struct ScalingInput {
  StepProfile profile;            // measured at profile.rows_per_rank rows per rank
  std::int64_t global_batch = 0;  // strong scaling keeps this fixed
  ddp::Strategy strategy = ddp::Strategy::Bucketed;
  double bucket_cap_bytes = 25.0 * (1 << 20);
  // All-reduce time for (ranks, bytes) on an idle link, and (optional; empty: the same) after
  // `before` bytes streamed in the same busy period (AllReduceTime::streamed).
  std::function<double(int ranks, double bytes)> allreduce;
  std::function<double(int ranks, double bytes, double before)> allreduce_streamed;
};

// Compute per rank scales with rows per rank (data, forward, backward), the optimizer does not
// (every rank updates the whole model). Rank counts: powers of two up to max_ranks.
std::vector<ScalingPoint> predict_strong_scaling(const ScalingInput& in, int max_ranks);
std::vector<ScalingPoint> predict_weak_scaling(const ScalingInput& in, int max_ranks);

// Compute-phase profile at another local batch size (linear in rows; optimizer constant).
StepProfile rescale_rows(const StepProfile& p, std::int64_t rows);

}  // namespace microddp::perf
