// analysis.hpp — what `microddp analyze` concludes from a recorded run and a communication model,
// as typed values (analysis_report.hpp prints them as text and as JSON).
//
// The analysis: step breakdown (means, so the phases add up: step = Σ phases + untimed rest),
// communication overhead % (exposed / step), overlap % (1 - exposed / busy comm, comm_busy.hpp), predicted vs
// measured step time per strategy with the relative error, every strategy predicted from one run's
// compute, the bucket-size sweep and its optimum, the bottleneck verdict with its numbers, and
// predicted strong/weak scaling for 1..max_ranks ranks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ddp/strategy.hpp"
#include "perf/alpha_beta.hpp"
#include "perf/run_record.hpp"
#include "perf/step_model.hpp"
#include "perf/step_stats.hpp"

namespace microddp::perf {

struct Breakdown {
  double step_ms = 0, data_ms = 0, forward_ms = 0, backward_ms = 0, exposed_ms = 0, loss_sync_ms = 0, optimizer_ms = 0,
         other_ms = 0, comm_total_ms = 0;
  // comm_total_ms: Σ launch -> completion (queueing included); busy: union of the execution
  // intervals; queued: Σ start - launch (perf/comm_busy.hpp).
  double comm_busy_ms = 0, comm_queued_ms = 0;
  std::int64_t collectives = 0, comm_bytes = 0;
  double comm_overhead_pct() const { return step_ms > 0 ? 100.0 * (exposed_ms + loss_sync_ms) / step_ms : 0.0; }
  // 1 - exposed / busy, clamped to [0, 100] (overlap_fraction).
  double overlap_pct() const { return 100.0 * overlap_fraction(exposed_ms, comm_busy_ms); }
  double phase_sum_ms() const { return data_ms + forward_ms + backward_ms + exposed_ms + loss_sync_ms + optimizer_ms; }
};
Breakdown breakdown_of(const StepStats& mean);

StepProfile profile_of(const RunRecord& rec, const StrategyRun& run);

// A GPU step's time outside the device's phases: step - (data + forward + backward + exposed
// communication + optimizer), at least 0. On a GPU those phases are CUDA-event times and the host's
// loss sync contains the wait for them (docs/gpu.md, "Phase timing"), so the loss sync cannot be
// added to them; what is left is the host's share: launches, the synchronisation, the verdict.
double gpu_host_ms(const StepStats& mean);

struct Verdict {
  std::string kind;                                               // compute-bound | communication-bound | memory-bound
  double compute_pct = 0, communication_pct = 0, memory_pct = 0;  // shares of the step
  // A GPU run only: the share of the step outside the device's phases (kernel launches, the step's
  // one host synchronisation and the verdict's all-reduce): gpu_host_ms / step.
  double host_pct = 0;
  double gemm_gflops = 0;  // achieved in forward+backward (6·rows·weights FLOPs)
  double peak_gflops = 0;
  std::string peak_source;        // where peak_gflops comes from (the report says it)
  double optimizer_gbytes_s = 0;  // bytes the optimizer streams / its time
  double memory_gbytes_s = 0;     // the reference bandwidth
  std::string memory_source;      // where memory_gbytes_s comes from
  double comm_gbytes_s = 0;       // bytes all-reduced / total comm time
  std::string reason;
};
struct AnalyzeOptions;
Verdict bottleneck(const RunRecord& rec, const Breakdown& b, const AnalyzeOptions& opt);

struct AnalyzeOptions {
  double link_gbps = 0;  // 0: use the fitted model of the run's backend for scaling
  double latency_us = 0;
  // With link_gbps: the rate of the local reduction (GB/s of payload reduced, γ = 1/rate), which a
  // link's numbers do not include. 0: left out. (Fitted models fold γ into an effective β.)
  double reduce_gbytes_s = 0;
  int max_ranks = 1024;
  // The strategy (and bucket cap) the scaling prediction assumes.
  ddp::Strategy scaling_strategy = ddp::Strategy::Bucketed;
  double scaling_bucket_mb = 25.0;
  // A fitted regime with burst credit (alpha_beta.hpp SizeRegime): false ("every", the default), every
  // collective gets the time the benchmark measured, which is right where the curve's shape is the
  // machine's (a cache or protocol cliff); true ("idle", `--burst-credit idle`), the credit is a
  // shaped link's token bucket, refilled only while the link is idle, so the collectives of a busy
  // period stream as one transfer (step_model.hpp).
  bool burst_credit_refills_when_idle = false;
  double peak_gflops_per_thread = 166;  // the development machine: 64 FLOP/cycle × 2.6 GHz (AVX-512 FMA)
  double mem_gbytes_s = 15;             // the development machine: STREAM-style triad, 1 thread
  // A GPU run's references (RunRecord::on_gpu), used instead of the two above: the device's GEMM
  // peak in GFLOP/s and its memory bandwidth in GB/s, each with where it came from ("measured on
  // cuda:0 ...", "--peak-gflops, given for this GPU", or why it is unknown; 0 when unknown).
  double device_peak_gflops = 0;
  std::string device_peak_source;
  double device_mem_gbytes_s = 0;
  std::string device_mem_source;
};

// All-reduce time for the run's backend at `ranks` (0 at one rank); async = the progress-thread
// variant when the model has one ("<backend>/async").
// streamed_before > 0: the collective continues a shaped link's busy period that streamed that
// many bytes (ModelEntry::streamed_time_s).
double model_allreduce_s(const CommModel& m, const std::string& backend, int ranks, double bytes, bool async,
                         double streamed_before = 0);
// The step model's all-reduce time (step_model.hpp AllReduceTime) from the model; a busy period
// streams as one transfer only if burst credit refills when idle (AnalyzeOptions). `m` must outlive
// the result.
AllReduceTime model_allreduce(const CommModel& m, const std::string& backend, int ranks, bool async,
                              bool burst_credit_refills_when_idle);

// One strategy of the record: what was measured and what the model predicts for it.
struct StrategyResult {
  ddp::Strategy strategy = ddp::Strategy::Naive;
  double bucket_mb = 0;   // the run's bucket cap (bucketed), else 0
  std::size_t steps = 0;  // timed steps the means are over
  Breakdown measured;
  double peer_lag_ms = 0;  // measured lag of the slowest rank (perf::PeerArrival)
  StepPrediction predicted;
  double error_pct = 0;  // 100 · (predicted - measured) / measured step time
};

// Predicted scaling over rank counts 1, 2, 4, ... max_ranks.
struct ScalingResult {
  std::string network;         // what the collectives at other rank counts cost, in words
  double reduce_gbytes_s = 0;  // the local reduction rate added to a --link-gbps network (0: none)
  ddp::Strategy strategy = ddp::Strategy::Bucketed;
  double bucket_mb = 0;                 // bucketed: the cap assumed
  std::int64_t global_batch = 0;        // strong scaling keeps it
  std::int64_t rows_per_rank_weak = 0;  // weak scaling keeps it
  std::string model_warning;            // the fit's warning when a fitted model predicts it (fit_warning)
  std::vector<ScalingPoint> strong, weak;
};

struct Analysis {
  RunRecord record;  // what was analysed (its configuration and source are reported)
  std::string model_source;
  std::vector<ModelEntry> comm_model;
  bool burst_credit_refills_when_idle = false;  // AnalyzeOptions: how a burst regime was used
  std::vector<std::string> warnings;       // the node's layout makes the model's assumptions shaky
  std::vector<StrategyResult> strategies;  // in the record's order
  double max_abs_error_pct = 0;
  // The reference run: the overlapping one (bucketed, else overlap) if present, else the first.
  // Breakdown, verdict, what-if predictions, bucket sweep and scaling come from its compute.
  ddp::Strategy reference = ddp::Strategy::Naive;
  double reference_peer_lag_ms = 0;
  Breakdown breakdown;
  Verdict bottleneck;
  std::vector<StepPrediction> predicted_strategies;  // every strategy, at the record's rank count
  std::vector<StepPrediction> bucket_sweep;          // bucketed at each cap tried (ascending)
  StepPrediction best_bucket;
  ScalingResult scaling;
  // Non-empty when the run's backend's fit is poor (perf/link_classes.hpp fit_warning): every
  // prediction made from it (strategies, what-if, best bucket) carries it in both printers.
  std::string model_warning;
};

// Throws core::UsageError for a record without runs or options out of range.
Analysis analyze(const RunRecord& rec, const CommModel& model, const AnalyzeOptions& opt);

}  // namespace microddp::perf
