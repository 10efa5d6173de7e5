// run_record.hpp — what a measured run leaves for `microddp analyze`: per strategy that was run, the
// per-step phase statistics (from the event log, the one source of timing truth) and the mean
// per-layer backward times.
//
// Written by `analyze --save-run` (fresh run) as JSON and read back by --run; rebuilt from a
// `train --metrics` JSONL record (then without per-layer times: those are estimated from parameter
// counts, see step_model.hpp). Reading is hardened: a record no run of microddp could have written
// (missing or mistyped fields, an unknown strategy, shapes or times out of range) is a
// core::UsageError naming the problem.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddp/strategy.hpp"
#include "model/mlp.hpp"
#include "perf/step_stats.hpp"

namespace microddp::perf {

struct StrategyRun {
  ddp::Strategy strategy = ddp::Strategy::Naive;
  double bucket_mb = 0;                   // bucketed only
  std::vector<StepStats> steps;           // timed steps
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
  // Where the model computed: "cpu" or "cuda" (records without the field: cpu), the compute line of
  // the run's header ("cuda:0 (NVIDIA ..., cuBLAS ...)"; "" when unknown) and the GEMM precision.
  std::string device = "cpu";
  std::string compute;
  std::string precision = "fp32";
  std::string source;  // where it came from
  std::vector<StrategyRun> runs;
  std::int64_t rows_per_rank() const { return (global_batch + ranks - 1) / ranks; }
  bool on_gpu() const { return device == "cuda"; }
  // On a GPU the compute is not on the cores: neither of the two below applies.
  bool time_sliced() const {
    return !on_gpu() && ranks_per_node > 0 && cores_per_node > 0 && ranks_per_node * threads > cores_per_node;
  }
  // Every core runs a compute thread, none is left for a rank's communication thread (which then
  // shares its rank's cores during backward).
  bool no_spare_core() const {
    return !on_gpu() && ranks_per_node > 0 && cores_per_node > 0 && ranks_per_node * (threads + 1) > cores_per_node;
  }
};

nlohmann::json to_json(const RunRecord& r);
// The record's "config" object alone (model shape, batch, ranks, threads, node layout, backend).
nlohmann::json config_json(const RunRecord& r);
RunRecord run_record_from_json(const nlohmann::json& j);
RunRecord load_run_record(const std::string& path);
// `train --metrics` JSONL: the step lines become one StrategyRun (first step skipped as warm-up); of a
// file that holds several runs (train appends), the last one (after its "start" record).
RunRecord run_record_from_metrics(const std::string& path);

}  // namespace microddp::perf
