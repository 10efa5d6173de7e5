// analysis.hpp — what `microddp analyze` reports, computed from a recorded run and a comm model.
//
// A RunRecord holds, per strategy that was run, the per-step phase statistics (from the event log,
// the one source of timing truth) and the mean per-layer backward times. It is written by
// `analyze --save-run` (fresh run) and can be rebuilt from `train --metrics` JSONL (then without
// per-layer times: those are estimated from parameter counts, see step_model.hpp).
//
// The report: step breakdown (means, so the phases add up: step = Σ phases + untimed rest),
// communication overhead % (exposed / step), overlap % (1 - exposed / total comm), predicted vs
// measured step time per strategy with the relative error, the best bucket size, the bottleneck
// verdict with its numbers, and predicted strong/weak scaling for 1..max_ranks ranks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/mlp.hpp"
#include "perf/alpha_beta.hpp"
#include "perf/step_model.hpp"
#include "perf/step_stats.hpp"

namespace microddp::perf {

struct StrategyRun {
  std::string strategy;
  double bucket_mb = 0;                 // bucketed only
  std::vector<StepStats> steps;         // timed steps
  std::vector<double> layer_backward_ms;  // mean per layer, backward execution order
  std::vector<int> layer_ids;
  // Mean per step of how much later than this rank the slowest rank finished backward (ms,
  // perf::PeerArrival); 0 when unknown (a record written before it was measured).
  double peer_lag_ms = 0;
  StepStats mean() const;
};

struct RunRecord {
  model::MlpConfig model;
  std::int64_t global_batch = 0;
  int ranks = 1;
  int threads = 1;
  // Ranks on the busiest node and that node's hardware threads (0: unknown, e.g. an older record).
  // With ranks_per_node * threads > cores_per_node the ranks time-slice the cores: the step model
  // then lets no collective overlap backward (StepProfile::time_sliced), and analyze() says so in
  // "warnings".
  int ranks_per_node = 0;
  int cores_per_node = 0;
  std::string backend = "mpi";
  std::string optimizer = "adam";
  std::string source;  // where it came from
  std::vector<StrategyRun> runs;
  std::int64_t rows_per_rank() const { return (global_batch + ranks - 1) / ranks; }
  bool time_sliced() const { return ranks_per_node > 0 && cores_per_node > 0 && ranks_per_node * threads > cores_per_node; }
  // Every core runs a compute thread, none is left for a rank's communication thread (which then
  // shares its rank's cores during backward).
  bool no_spare_core() const {
    return ranks_per_node > 0 && cores_per_node > 0 && ranks_per_node * (threads + 1) > cores_per_node;
  }
};

nlohmann::json to_json(const RunRecord& r);
RunRecord run_record_from_json(const nlohmann::json& j);
RunRecord load_run_record(const std::string& path);
// `train --metrics` JSONL: the step lines become one StrategyRun (first step skipped as warm-up).
RunRecord run_record_from_metrics(const std::string& path);

struct Breakdown {
  double step_ms = 0, data_ms = 0, forward_ms = 0, backward_ms = 0, exposed_ms = 0, loss_sync_ms = 0,
         optimizer_ms = 0, other_ms = 0, comm_total_ms = 0;
  std::int64_t collectives = 0, comm_bytes = 0;
  double comm_overhead_pct() const { return step_ms > 0 ? 100.0 * (exposed_ms + loss_sync_ms) / step_ms : 0.0; }
  // Clamped at 0: CommWait also covers the loop around the waits, so exposed can exceed total by µs.
  double overlap_pct() const { return comm_total_ms > 0 ? 100.0 * std::max(0.0, 1.0 - exposed_ms / comm_total_ms) : 0.0; }
  double phase_sum_ms() const { return data_ms + forward_ms + backward_ms + exposed_ms + loss_sync_ms + optimizer_ms; }
};
Breakdown breakdown_of(const StepStats& mean);

StepProfile profile_of(const RunRecord& rec, const StrategyRun& run);

struct Verdict {
  std::string kind;  // compute-bound | communication-bound | memory-bound
  double compute_pct = 0, communication_pct = 0, memory_pct = 0;  // shares of the step
  double gemm_gflops = 0;          // achieved in forward+backward (6·rows·weights FLOPs)
  double peak_gflops = 0;
  double optimizer_gbytes_s = 0;   // bytes the optimizer streams / its time
  double memory_gbytes_s = 0;      // the reference bandwidth
  double comm_gbytes_s = 0;        // bytes all-reduced / total comm time
  std::string reason;
};
Verdict bottleneck(const RunRecord& rec, const Breakdown& b, double peak_gflops_per_thread, double mem_gbytes_s);

struct AnalyzeOptions {
  double link_gbps = 0;     // 0: use the fitted model of the run's backend for scaling
  double latency_us = 0;
  // With link_gbps: the rate of the local reduction (GB/s of payload reduced, γ = 1/rate), which a
  // link's numbers do not include. 0: left out. (Fitted models fold γ into an effective β.)
  double reduce_gbytes_s = 0;
  int max_ranks = 1024;
  // The strategy (and bucket cap) the scaling prediction assumes: naive | flat | overlap | bucketed.
  std::string scaling_strategy = "bucketed";
  double scaling_bucket_mb = 25.0;
  double peak_gflops_per_thread = 166;  // machine-anchors.md: 64 FLOP/cycle × 2.6 GHz
  double mem_gbytes_s = 15;             // machine-anchors.md: triad, 1 thread
};

// All-reduce time for the run's backend at `ranks` (0 at one rank); async = the progress-thread
// variant when the model has one ("<backend>/async").
double model_allreduce_s(const CommModel& m, const std::string& backend, int ranks, double bytes, bool async);

nlohmann::json analyze(const RunRecord& rec, const CommModel& model, const AnalyzeOptions& opt);
// Human-readable report of analyze()'s JSON.
std::string format_report(const nlohmann::json& report);

}  // namespace microddp::perf
