// analysis.cpp — run records (I/O), breakdown, bottleneck verdict, the analyze report.
#include "perf/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "perf/config_json.hpp"
#include "perf/metrics_jsonl.hpp"

namespace microddp::perf {

namespace {
StepStats mean_of(const std::vector<StepStats>& v) {
  StepStats m;
  if (v.empty()) return m;
  for (const auto& s : v) {
    m.step_ms += s.step_ms;
    m.data_ms += s.data_ms;
    m.forward_ms += s.forward_ms;
    m.backward_ms += s.backward_ms;
    m.optimizer_ms += s.optimizer_ms;
    m.loss_sync_ms += s.loss_sync_ms;
    m.comm_total_ms += s.comm_total_ms;
    m.comm_exposed_ms += s.comm_exposed_ms;
    m.compress_ms += s.compress_ms;
  }
  const double n = static_cast<double>(v.size());
  m.step_ms /= n;
  m.data_ms /= n;
  m.forward_ms /= n;
  m.backward_ms /= n;
  m.optimizer_ms /= n;
  m.loss_sync_ms /= n;
  m.comm_total_ms /= n;
  m.comm_exposed_ms /= n;
  m.compress_ms /= n;
  m.collectives = v.back().collectives;
  m.comm_bytes = v.back().comm_bytes;
  return m;
}

StepStats stats_from_json(const nlohmann::json& j) {
  StepStats s;
  s.step = j.value("step", std::int64_t{0});
  s.step_ms = j.value("step_ms", 0.0);
  s.data_ms = j.value("data_ms", 0.0);
  s.forward_ms = j.value("forward_ms", 0.0);
  s.backward_ms = j.value("backward_ms", 0.0);
  s.optimizer_ms = j.value("optimizer_ms", 0.0);
  s.loss_sync_ms = j.value("loss_sync_ms", 0.0);
  s.comm_total_ms = j.value("comm_total_ms", 0.0);
  s.comm_exposed_ms = j.value("comm_exposed_ms", 0.0);
  s.collectives = j.value("collectives", std::int64_t{0});
  s.comm_bytes = j.value("comm_bytes", std::int64_t{0});
  s.compress_ms = j.value("compress_ms", 0.0);
  return s;
}
}  // namespace

StepStats StrategyRun::mean() const { return mean_of(steps); }


nlohmann::json to_json(const RunRecord& r) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& run : r.runs) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : run.steps) steps.push_back(to_json(s));
    runs.push_back({{"strategy", run.strategy},
                    {"bucket_mb", run.bucket_mb},
                    {"layer_backward_ms", run.layer_backward_ms},
                    {"layer_ids", run.layer_ids},
                    {"peer_lag_ms", run.peer_lag_ms},
                    {"steps", steps}});
  }
  return {{"type", "microddp_run_record"},
          {"version", 1},
          {"source", r.source},
          {"config",
           {{"in_dim", r.model.in_dim},
            {"width", r.model.width},
            {"depth", r.model.depth},
            {"classes", r.model.classes},
            {"global_batch", r.global_batch},
            {"ranks", r.ranks},
            {"threads", r.threads},
            {"ranks_per_node", r.ranks_per_node},
            {"cores_per_node", r.cores_per_node},
            {"comm", r.backend},
            {"optimizer", r.optimizer}}},
          {"runs", runs}};
}

namespace {
// The "config" object of a run record or a metrics summary. The configuration fields come from the
// one table (perf/config_json.hpp; absent ones keep TrainConfig's defaults, which are the course
// model's); the run's facts (ranks, threads, backend, ...) are read here. Returns the whole
// configuration for the callers that need more of it (strategy, bucket size).
ddp::TrainConfig config_from_json(const nlohmann::json& c, RunRecord& r) {
  ddp::TrainConfig cfg;
  train_config_from_json(c, cfg);
  r.model = cfg.model;
  if (!c.contains("in_dim")) r.model.in_dim = r.model.width;  // older records: the course model's Linear(d, d)
  r.global_batch = cfg.global_batch;
  r.optimizer = cfg.optimizer.name;
  r.ranks = c.value("ranks", 1);
  r.threads = c.value("threads", 1);
  r.ranks_per_node = std::max(0, c.value("ranks_per_node", 0));
  r.cores_per_node = std::max(0, c.value("cores_per_node", 0));
  r.backend = c.value("comm", std::string("mpi"));
  return cfg;
}
}  // namespace

namespace {
// The fields of a run record, unchecked (nlohmann throws on a missing or mistyped one).
RunRecord run_record_fields(const nlohmann::json& j) {
  RunRecord r;
  r.source = j.value("source", "");
  config_from_json(j.at("config"), r);
  for (const auto& x : j.at("runs")) {
    StrategyRun run;
    run.strategy = x.at("strategy").get<std::string>();
    run.bucket_mb = x.value("bucket_mb", 0.0);
    run.layer_backward_ms = x.value("layer_backward_ms", std::vector<double>{});
    run.layer_ids = x.value("layer_ids", std::vector<int>{});
    run.peer_lag_ms = x.value("peer_lag_ms", 0.0);
    for (const auto& s : x.at("steps")) run.steps.push_back(stats_from_json(s));
    r.runs.push_back(run);
  }
  return r;
}

// A record read from a file drives divisions and array indexing below: refuse what no run of
// microddp could have written, with a message naming the field (UsageError, exit 2).
void check_record(const RunRecord& r, const std::string& where) {
  constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
  const auto& m = r.model;
  MDDP_USAGE_CHECK(m.in_dim >= 1 && m.in_dim <= kMaxDim && m.width >= 1 && m.width <= kMaxDim && m.depth >= 1 &&
                       m.depth <= 4096 && m.classes >= 2 && m.classes <= kMaxDim,
                   where << ": model shape in_dim " << m.in_dim << ", width " << m.width << ", depth " << m.depth
                         << ", classes " << m.classes << " is out of range");
  MDDP_USAGE_CHECK(r.ranks >= 1 && r.ranks <= (1 << 24), where << ": ranks " << r.ranks << " is out of range");
  MDDP_USAGE_CHECK(r.threads >= 1 && r.threads <= 4096, where << ": threads " << r.threads << " is out of range");
  MDDP_USAGE_CHECK(r.global_batch >= 1 && r.global_batch <= (std::int64_t{1} << 40),
                   where << ": global_batch " << r.global_batch << " is out of range");
  for (const auto& run : r.runs) {
    MDDP_USAGE_CHECK(run.layer_backward_ms.size() == run.layer_ids.size(),
                     where << ": " << run.layer_backward_ms.size() << " layer times for " << run.layer_ids.size()
                           << " layer ids");
    for (std::size_t i = 0; i < run.layer_ids.size(); ++i) {
      MDDP_USAGE_CHECK(run.layer_ids[i] >= 0 && run.layer_ids[i] <= m.depth && std::isfinite(run.layer_backward_ms[i]) &&
                           run.layer_backward_ms[i] >= 0,
                       where << ": layer entry " << i << " (id " << run.layer_ids[i] << ", "
                             << run.layer_backward_ms[i] << " ms) does not fit a model of depth " << m.depth);
    }
    MDDP_USAGE_CHECK(std::isfinite(run.bucket_mb) && run.bucket_mb >= 0, where << ": bucket_mb " << run.bucket_mb);
    MDDP_USAGE_CHECK(std::isfinite(run.peer_lag_ms) && run.peer_lag_ms >= 0,
                     where << ": peer_lag_ms " << run.peer_lag_ms << " (must be finite and >= 0)");
    for (const auto& s : run.steps) {
      for (double v : {s.step_ms, s.data_ms, s.forward_ms, s.backward_ms, s.optimizer_ms, s.loss_sync_ms,
                       s.comm_total_ms, s.comm_exposed_ms}) {
        MDDP_USAGE_CHECK(std::isfinite(v) && v >= 0, where << ": step " << s.step << " has a time of " << v << " ms");
      }
    }
  }
}
}  // namespace

RunRecord run_record_from_json(const nlohmann::json& j) {
  MDDP_USAGE_CHECK(j.is_object() && j.value("type", "") == "microddp_run_record",
                   "not a microddp run record (expected \"type\": \"microddp_run_record\")");
  try {
    RunRecord r = run_record_fields(j);
    check_record(r, "run record");
    return r;
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type or missing
    MDDP_USAGE_CHECK(false, "malformed run record: " << e.what());
  }
  return {};  // not reached
}


RunRecord load_run_record(const std::string& path) {
  std::ifstream in(path);
  MDDP_USAGE_CHECK(in.good(), "cannot open run record '" << path << "'");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    MDDP_USAGE_CHECK(false, "'" << path << "' is not valid JSON: " << e.what());
  }
  RunRecord r = run_record_from_json(j);
  if (r.source.empty()) r.source = path;
  return r;
}

RunRecord run_record_from_metrics(const std::string& path) {
  std::ifstream in(path);
  MDDP_USAGE_CHECK(in.good(), "cannot open metrics file '" << path << "'");
  RunRecord r;
  r.source = path;
  StrategyRun run;
  std::vector<StepStats> steps;
  bool have_summary = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      MDDP_USAGE_CHECK(false, "'" << path << "': a line is not JSON: " << e.what());
    }
    try {
      const std::string type = j.is_object() ? j.value("type", "") : "";
      if (type == "step") steps.push_back(stats_from_json(j));
      if (type == "summary") {
        const ddp::TrainConfig cfg = config_from_json(j.at("config"), r);
        run.strategy = cfg.strategy;
        run.bucket_mb = cfg.sync_options.bucket_mb;
        // Per-layer backward times, when train ran with --layer-events (else spread by FLOPs).
        run.layer_backward_ms = j.value("layer_backward_ms", std::vector<double>{});
        run.layer_ids = j.value("layer_ids", std::vector<int>{});
        run.peer_lag_ms = j.value("peer_lag_ms", 0.0);
        have_summary = true;
      }
    } catch (const nlohmann::json::exception& e) {  // a field of the wrong type or missing
      MDDP_USAGE_CHECK(false, "'" << path << "': malformed line: " << e.what());
    }
  }
  MDDP_USAGE_CHECK(have_summary, "'" << path << "' has no summary line (did the run finish?)");
  MDDP_USAGE_CHECK(!steps.empty(), "'" << path << "' has no step lines");
  // Steady state: skip the first step (cold caches), as train's summary does.
  if (steps.size() > 1) steps.erase(steps.begin());
  run.steps = steps;
  r.runs.push_back(run);
  check_record(r, "'" + path + "'");
  return r;
}

Breakdown breakdown_of(const StepStats& m) {
  Breakdown b;
  b.step_ms = m.step_ms;
  b.data_ms = m.data_ms;
  b.forward_ms = m.forward_ms;
  b.backward_ms = m.backward_ms;
  b.exposed_ms = m.comm_exposed_ms;
  b.loss_sync_ms = m.loss_sync_ms;
  b.optimizer_ms = m.optimizer_ms;
  b.comm_total_ms = m.comm_total_ms;
  b.collectives = m.collectives;
  b.comm_bytes = m.comm_bytes;
  b.other_ms = m.step_ms - b.phase_sum_ms();
  return b;
}

StepProfile profile_of(const RunRecord& rec, const StrategyRun& run) {
  const StepStats m = run.mean();
  StepProfile p;
  p.data_s = m.data_ms * 1e-3;
  p.forward_s = m.forward_ms * 1e-3;
  p.backward_s = m.backward_ms * 1e-3;
  p.optimizer_s = m.optimizer_ms * 1e-3;
  p.loss_sync_s = m.loss_sync_ms * 1e-3;
  p.other_s = std::max(0.0, breakdown_of(m).other_ms * 1e-3);
  p.params = model::param_layout(rec.model);
  p.rows_per_rank = rec.rows_per_rank();
  p.peer_lag_s = run.peer_lag_ms * 1e-3;
  p.time_sliced = rec.time_sliced();
  if (m.compress_ms > 0) {  // a compressed run: its measured wire bytes relative to fp32 and encode cost
    const double fp32_bytes = static_cast<double>(model::flat_count(p.params)) * 4.0;
    p.wire_ratio = fp32_bytes > 0 && m.comm_bytes > 0 ? std::min(1.0, static_cast<double>(m.comm_bytes) / fp32_bytes) : 1.0;
    p.compress_s = m.compress_ms * 1e-3;
  }
  if (!run.layer_backward_ms.empty() && run.layer_backward_ms.size() == run.layer_ids.size()) {
    for (double ms : run.layer_backward_ms) p.layer_backward_s.push_back(ms * 1e-3);
    p.layer_ids = run.layer_ids;
  } else {
    fill_layer_times_from_params(p);
  }
  return p;
}

Verdict bottleneck(const RunRecord& rec, const Breakdown& b, double peak_gflops_per_thread, double mem_gbytes_s) {
  Verdict v;
  const auto params = model::param_layout(rec.model);
  double weights = 0, total = 0;
  for (const auto& p : params) {
    total += static_cast<double>(p.count);
    if (!p.is_bias) weights += static_cast<double>(p.count);
  }
  const double rows = static_cast<double>(rec.rows_per_rank());
  const double flops = 6.0 * rows * weights;  // forward 2·rows·W, backward dW + dX 4·rows·W
  const double compute_ms = b.forward_ms + b.backward_ms;
  v.gemm_gflops = compute_ms > 0 ? flops / (compute_ms * 1e-3) * 1e-9 : 0;
  v.peak_gflops = peak_gflops_per_thread * std::max(1, rec.threads);
  // Adam/AdamW read p, g, m, v and write p, m, v: 28 bytes per parameter; SGD(+momentum) ~16.
  const double opt_bytes = (rec.optimizer == "sgd" ? 16.0 : 28.0) * total;
  v.optimizer_gbytes_s = b.optimizer_ms > 0 ? opt_bytes / (b.optimizer_ms * 1e-3) * 1e-9 : 0;
  v.memory_gbytes_s = mem_gbytes_s;
  v.comm_gbytes_s = b.comm_total_ms > 0 ? static_cast<double>(b.comm_bytes) / (b.comm_total_ms * 1e-3) * 1e-9 : 0;
  const double step = std::max(b.step_ms, 1e-12);
  v.compute_pct = 100.0 * compute_ms / step;
  v.communication_pct = 100.0 * (b.exposed_ms + b.loss_sync_ms) / step;
  v.memory_pct = 100.0 * (b.optimizer_ms + b.data_ms) / step;
  std::ostringstream why;
  char buf[512];
  if (v.communication_pct >= v.compute_pct && v.communication_pct >= v.memory_pct) {
    v.kind = "communication-bound";
    std::snprintf(buf, sizeof buf,
                  "exposed communication is %.1f%% of the step (%.3f of %.3f ms); all-reduce moves %.2f MiB/step at "
                  "%.2f GB/s algorithm bandwidth",
                  v.communication_pct, b.exposed_ms + b.loss_sync_ms, b.step_ms,
                  static_cast<double>(b.comm_bytes) / (1 << 20), v.comm_gbytes_s);
  } else if (v.memory_pct > v.compute_pct) {
    v.kind = "memory-bound";
    std::snprintf(buf, sizeof buf,
                  "optimizer + data take %.1f%% of the step; the optimizer streams %.1f MB at %.1f GB/s (reference %.1f "
                  "GB/s) while forward+backward reach %.1f GFLOP/s",
                  v.memory_pct, opt_bytes * 1e-6, v.optimizer_gbytes_s, mem_gbytes_s, v.gemm_gflops);
  } else {
    v.kind = "compute-bound";
    std::snprintf(buf, sizeof buf,
                  "forward+backward take %.1f%% of the step at %.1f GFLOP/s (%.0f%% of %.0f GFLOP/s peak for %d "
                  "thread(s)); exposed communication %.1f%%, optimizer+data %.1f%%",
                  v.compute_pct, v.gemm_gflops, v.peak_gflops > 0 ? 100.0 * v.gemm_gflops / v.peak_gflops : 0.0,
                  v.peak_gflops, rec.threads, v.communication_pct, v.memory_pct);
  }
  v.reason = buf;
  return v;
}

double model_allreduce_s(const CommModel& m, const std::string& backend, int ranks, double bytes, bool async) {
  if (ranks <= 1) return 0.0;
  if (async) {
    if (const ModelEntry* e = m.find(backend + "/async")) {
      return e->time_s(ranks, bytes);
    }
  }
  return m.time_s(backend, Collective::AllReduce, ranks, bytes);
}

namespace {

nlohmann::json breakdown_json(const Breakdown& b) {
  return {{"step_ms", b.step_ms},         {"data_ms", b.data_ms},         {"forward_ms", b.forward_ms},
          {"backward_ms", b.backward_ms}, {"exposed_comm_ms", b.exposed_ms}, {"loss_sync_ms", b.loss_sync_ms},
          {"optimizer_ms", b.optimizer_ms}, {"untimed_ms", b.other_ms},  {"phase_sum_ms", b.phase_sum_ms()},
          {"comm_total_ms", b.comm_total_ms}, {"collectives", b.collectives}, {"comm_bytes", b.comm_bytes},
          {"comm_overhead_pct", b.comm_overhead_pct()}, {"overlap_pct", b.overlap_pct()}};
}

nlohmann::json scaling_json(const std::vector<ScalingPoint>& pts) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& p : pts) {
    a.push_back({{"ranks", p.ranks},
                 {"rows_per_rank", p.rows_per_rank},
                 {"step_ms", p.step_s * 1e3},
                 {"exposed_comm_ms", p.comm_s * 1e3},
                 {"efficiency", p.efficiency},
                 {"samples_per_s", p.samples_per_s}});
  }
  return a;
}

}  // namespace

namespace {
std::string format_mib(double mb) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", mb);
  return buf;
}
}  // namespace

nlohmann::json analyze(const RunRecord& rec, const CommModel& model, const AnalyzeOptions& opt) {
  MDDP_USAGE_CHECK(!rec.runs.empty(), "the run record holds no runs");
  nlohmann::json out;
  out["type"] = "microddp_analysis";
  out["source"] = rec.source;
  out["model_source"] = model.source;
  out["config"] = to_json(rec)["config"];
  nlohmann::json comm = nlohmann::json::array();
  for (const auto& e : model.entries) {
    comm.push_back({{"backend", e.backend},
                    {"collective", collective_name(e.collective)},
                    {"algorithm", algorithm_name(e.algorithm)},
                    {"alpha_us", e.fit.model.alpha_s * 1e6},
                    {"beta_ns_per_byte", e.fit.model.beta_s_per_byte * 1e9},
                    {"r2", e.fit.r2},
                    {"max_rel_residual", e.fit.max_rel_residual},
                    {"line_rms_rel_residual", e.fit.line_rms_rel_residual},
                    {"rms_rel_residual", e.fit.rms_rel_residual},
                    {"regimes", regimes_json(e.fit.regimes)}});
  }
  out["comm_model"] = comm;
  nlohmann::json warnings = nlohmann::json::array();
  // The node's layout (docs/performance.md): compute threads alone exceed the cores (time slicing,
  // which the model handles), or they fill them and leave none for the communication threads
  // (measured at 2 ranks x 1 thread on 2 cores: overlap 133-136 ms per step with Open MPI's busy
  // polling, 98-106 ms with mpi_yield_when_idle=1; the model assumes the latter).
  std::ostringstream node;
  if (rec.time_sliced()) {
    node << "oversubscribed: " << rec.ranks_per_node << " ranks x " << rec.threads << " compute thread(s) on "
         << rec.cores_per_node
         << " cores. The ranks time-slice the cores: the model lets no collective overlap backward here (its peers "
            "are not running at the same time) and adds the measured lag of the slowest rank; these numbers "
            "describe this node's scheduling, not the network";
  } else if (rec.no_spare_core()) {
    node << "no spare core: " << rec.ranks_per_node << " ranks x (" << rec.threads
         << " compute + 1 communication thread) on " << rec.cores_per_node
         << " cores. During backward the communication thread of overlap/bucketed shares its rank's cores; the "
            "model assumes that waiting for a peer costs no compute, which holds only if the MPI library yields "
            "while it waits (Open MPI: OMPI_MCA_mpi_yield_when_idle=1, or mpirun --mca mpi_yield_when_idle 1)";
  }
  if (!node.str().empty()) warnings.push_back(node.str());
  out["warnings"] = warnings;

  const auto params = model::param_layout(rec.model);
  const std::string& backend = rec.backend;
  const int n = rec.ranks;
  nlohmann::json strategies = nlohmann::json::array();
  double worst_err = 0;
  const StrategyRun* reference = &rec.runs.front();
  for (const auto& run : rec.runs) {
    const Breakdown b = breakdown_of(run.mean());
    const StepProfile prof = profile_of(rec, run);
    const bool async = run.strategy == "overlap" || run.strategy == "bucketed";
    const AllReduceTime ar = [&](double bytes) { return model_allreduce_s(model, backend, n, bytes, async); };
    const StepPrediction p = predict_step(prof, run.strategy, ar, run.bucket_mb * (1 << 20));
    const double err = b.step_ms > 0 ? (p.step_s * 1e3 - b.step_ms) / b.step_ms : 0.0;
    worst_err = std::max(worst_err, std::abs(err));
    // Predicting another strategy from this run's compute.
    strategies.push_back({{"strategy", run.strategy},
                          {"bucket_mb", run.bucket_mb},
                          {"steps", run.steps.size()},
                          {"measured", breakdown_json(b)},
                          {"peer_lag_ms", run.peer_lag_ms},
                          {"predicted",
                           {{"step_ms", p.step_s * 1e3},
                            {"exposed_comm_ms", p.exposed_comm_s * 1e3},
                            {"comm_total_ms", p.comm_total_s * 1e3},
                            {"collectives", p.collectives},
                            {"overlap_pct", 100.0 * p.overlap()}}},
                          {"error_pct", 100.0 * err}});
    if (run.strategy == "bucketed" || (reference->strategy != "bucketed" && run.strategy == "overlap")) reference = &run;
  }
  out["strategies"] = strategies;
  out["max_abs_error_pct"] = 100.0 * worst_err;

  // Breakdown, verdict, bucket optimum and scaling from the reference run (the overlapping one if
  // present; otherwise the first).
  const Breakdown rb = breakdown_of(reference->mean());
  const StepProfile rprof = profile_of(rec, *reference);
  out["breakdown"] = breakdown_json(rb);
  out["breakdown"]["strategy"] = reference->strategy;
  out["breakdown"]["peer_lag_ms"] = reference->peer_lag_ms;
  const Verdict v = bottleneck(rec, rb, opt.peak_gflops_per_thread, opt.mem_gbytes_s);
  out["bottleneck"] = {{"verdict", v.kind},
                       {"compute_pct", v.compute_pct},
                       {"communication_pct", v.communication_pct},
                       {"memory_pct", v.memory_pct},
                       {"gemm_gflops", v.gemm_gflops},
                       {"peak_gflops", v.peak_gflops},
                       {"optimizer_gbytes_s", v.optimizer_gbytes_s},
                       {"memory_reference_gbytes_s", v.memory_gbytes_s},
                       {"comm_algbw_gbytes_s", v.comm_gbytes_s},
                       {"reason", v.reason}};

  // Every strategy predicted from the reference compute (what-if at this rank count).
  nlohmann::json whatif = nlohmann::json::array();
  for (const char* s : {"naive", "flat", "overlap", "bucketed"}) {
    const bool async = std::string(s) == "overlap" || std::string(s) == "bucketed";
    const AllReduceTime ar = [&](double bytes) { return model_allreduce_s(model, backend, n, bytes, async); };
    const StepPrediction p = predict_step(rprof, s, ar, reference->bucket_mb > 0 ? reference->bucket_mb * (1 << 20) : 25.0 * (1 << 20));
    whatif.push_back({{"strategy", s}, {"step_ms", p.step_s * 1e3}, {"exposed_comm_ms", p.exposed_comm_s * 1e3},
                      {"collectives", p.collectives}});
  }
  out["predicted_strategies"] = whatif;
  {
    const AllReduceTime ar = [&](double bytes) { return model_allreduce_s(model, backend, n, bytes, true); };
    const std::vector<StepPrediction> predicted = bucket_sweep(rprof, ar);
    const StepPrediction best = best_bucket(predicted);
    nlohmann::json sweep = nlohmann::json::array();
    for (const StepPrediction& p : predicted) {
      sweep.push_back({{"bucket_mb", p.bucket_bytes / (1 << 20)}, {"step_ms", p.step_s * 1e3},
                       {"exposed_comm_ms", p.exposed_comm_s * 1e3}, {"collectives", p.collectives}});
    }
    out["bucket_sweep"] = sweep;
    out["best_bucket"] = {{"bucket_mb", best.bucket_bytes / (1 << 20)},
                          {"step_ms", best.step_s * 1e3},
                          {"exposed_comm_ms", best.exposed_comm_s * 1e3},
                          {"collectives", best.collectives}};
  }

  // Scaling: user network (α, β from --link-gbps/--latency-us; γ = 0: the fits fold the reduction
  // into an effective β, docs/performance.md) or
  // the fitted model of this backend.
  // Scaling assumes a core per compute thread and no straggler: this node's time slicing and lag
  // say nothing about another rank count's nodes.
  ScalingInput in;
  in.profile = rprof;
  in.profile.peer_lag_s = 0;
  in.profile.time_sliced = false;
  in.global_batch = rec.global_batch;
  in.strategy = opt.scaling_strategy;
  in.bucket_cap_bytes = opt.scaling_bucket_mb * (1 << 20);
  MDDP_USAGE_CHECK(std::isfinite(opt.scaling_bucket_mb) && opt.scaling_bucket_mb > 0,
                   "--scaling-bucket-mb must be > 0, got " << opt.scaling_bucket_mb);
  std::string network;
  if (opt.link_gbps > 0) {
    MDDP_USAGE_CHECK(std::isfinite(opt.reduce_gbytes_s) && opt.reduce_gbytes_s >= 0,
                     "the local reduction rate must be >= 0 GB/s, got " << opt.reduce_gbytes_s);
    const AlphaBeta ab = AlphaBeta::from_link(opt.link_gbps, opt.latency_us,
                                              opt.reduce_gbytes_s > 0 ? 1e-9 / opt.reduce_gbytes_s : 0.0);
    in.allreduce = [ab](int ranks, double bytes) {
      return ab.time_s(cost_coefficients(Collective::AllReduce, Algorithm::Ring, ranks, bytes));
    };
    char buf[192];
    if (opt.reduce_gbytes_s > 0) {
      std::snprintf(buf, sizeof buf, "ring all-reduce over %.3g Gbit/s links, %.3g us latency, local reduction %.3g GB/s",
                    opt.link_gbps, opt.latency_us, opt.reduce_gbytes_s);
    } else {
      std::snprintf(buf, sizeof buf, "ring all-reduce over %.3g Gbit/s links, %.3g us latency (local reduction not counted)",
                    opt.link_gbps, opt.latency_us);
    }
    network = buf;
  } else {
    const ModelEntry* e = model.find(backend);
    if (e != nullptr) {
      const FitResult fit = e->fit;
      in.allreduce = [fit](int ranks, double bytes) {
        return fit.model_for(bytes).time_s(cost_coefficients(Collective::AllReduce, Algorithm::Ring, ranks, bytes));
      };
      network = "fitted model of backend '" + backend + "' extrapolated as a ring all-reduce";
    } else {
      in.allreduce = [](int, double) { return 0.0; };
      network = "no communication model: communication assumed free (give --model/--bench or --link-gbps)";
    }
  }
  out["scaling"] = {{"network", network},
                    {"reduce_gbytes_s", opt.link_gbps > 0 ? opt.reduce_gbytes_s : 0.0},
                    {"strategy", opt.scaling_strategy == "bucketed"
                                     ? "bucketed " + format_mib(opt.scaling_bucket_mb) + " MiB"
                                     : opt.scaling_strategy},
                    {"global_batch", rec.global_batch},
                    {"rows_per_rank_weak", rprof.rows_per_rank},
                    {"strong", scaling_json(predict_strong_scaling(in, opt.max_ranks))},
                    {"weak", scaling_json(predict_weak_scaling(in, opt.max_ranks))}};
  return out;
}

std::string format_report(const nlohmann::json& r) {
  std::ostringstream o;
  char buf[512];
  const auto& c = r.at("config");
  std::snprintf(buf, sizeof buf, "# microddp analyze: %s\n#   model in=%lld width=%lld depth=%lld classes=%lld, global batch %lld, %d rank(s) x %d thread(s), backend %s\n",
                r.value("source", "").c_str(), c.at("in_dim").get<long long>(), c.at("width").get<long long>(),
                c.at("depth").get<long long>(), c.at("classes").get<long long>(), c.at("global_batch").get<long long>(),
                c.at("ranks").get<int>(), c.at("threads").get<int>(), c.at("comm").get<std::string>().c_str());
  o << buf;
  o << "# communication model (" << r.value("model_source", "") << ")\n";
  for (const auto& e : r.at("comm_model")) {
    std::snprintf(buf, sizeof buf, "#   %-12s %-14s %-6s alpha %8.2f us  beta %8.4f ns/B (%6.2f GB/s)  R2 %.4f  max rel resid %.1f%%\n",
                  e.at("backend").get<std::string>().c_str(), e.at("collective").get<std::string>().c_str(),
                  e.at("algorithm").get<std::string>().c_str(), e.at("alpha_us").get<double>(),
                  e.at("beta_ns_per_byte").get<double>(),
                  e.at("beta_ns_per_byte").get<double>() > 0 ? 1.0 / e.at("beta_ns_per_byte").get<double>() : 0.0,
                  e.at("r2").get<double>(), 100.0 * e.at("max_rel_residual").get<double>());
    const auto regimes = e.value("regimes", nlohmann::json::array());
    if (!regimes.empty()) {
      // The line above is the one-line fit; predictions use the size regimes below.
      std::snprintf(buf, sizeof buf,
                    "#   %-12s %-14s %-6s alpha %8.2f us  beta %8.4f ns/B (%6.2f GB/s)  one line: rms rel resid %.1f%%\n"
                    "#     %zu size regimes (used for predictions): R2 %.4f  rms rel resid %.1f%%  max rel resid %.1f%%\n",
                    e.at("backend").get<std::string>().c_str(), e.at("collective").get<std::string>().c_str(),
                    e.at("algorithm").get<std::string>().c_str(), e.at("alpha_us").get<double>(),
                    e.at("beta_ns_per_byte").get<double>(),
                    e.at("beta_ns_per_byte").get<double>() > 0 ? 1.0 / e.at("beta_ns_per_byte").get<double>() : 0.0,
                    100.0 * e.value("line_rms_rel_residual", 0.0), regimes.size(), e.at("r2").get<double>(),
                    100.0 * e.value("rms_rel_residual", 0.0), 100.0 * e.at("max_rel_residual").get<double>());
      for (const auto& g : regimes) {
        o << buf;
        const double beta = g.at("beta_ns_per_byte").get<double>();
        std::snprintf(buf, sizeof buf, "#       from %10.0f B: alpha %8.2f us  beta %8.4f ns/B (%6.2f GB/s)\n",
                      g.at("from_bytes").get<double>(), g.at("alpha_us").get<double>(), beta, beta > 0 ? 1.0 / beta : 0.0);
      }
    }
    o << buf;  // the last line formatted above
  }
  const auto& b = r.at("breakdown");
  std::snprintf(buf, sizeof buf,
                "\nStep breakdown (%s, means over timed steps, ms):\n  %-16s %9.3f\n  %-16s %9.3f\n  %-16s %9.3f\n  %-16s %9.3f\n"
                "  %-16s %9.3f\n  %-16s %9.3f\n  %-16s %9.3f\n  %-16s %9.3f  (= step - sum of phases)\n  %-16s %9.3f\n",
                b.at("strategy").get<std::string>().c_str(), "data", b.at("data_ms").get<double>(), "forward",
                b.at("forward_ms").get<double>(), "backward", b.at("backward_ms").get<double>(), "exposed comm",
                b.at("exposed_comm_ms").get<double>(), "loss sync", b.at("loss_sync_ms").get<double>(), "optimizer",
                b.at("optimizer_ms").get<double>(), "sum of phases", b.at("phase_sum_ms").get<double>(), "untimed",
                b.at("untimed_ms").get<double>(), "step", b.at("step_ms").get<double>());
  o << buf;
  std::snprintf(buf, sizeof buf, "  communication overhead %.1f%% of the step; overlap %.1f%% (total comm %.3f ms, %lld collectives)\n",
                b.at("comm_overhead_pct").get<double>(), b.at("overlap_pct").get<double>(), b.at("comm_total_ms").get<double>(),
                b.at("collectives").get<long long>());
  o << buf;
  std::snprintf(buf, sizeof buf, "  the slowest rank finishes backward %.3f ms later (mean per step; 0 if not recorded)\n",
                b.value("peer_lag_ms", 0.0));
  o << buf;
  o << "\nPredicted vs measured step time:\n";
  std::snprintf(buf, sizeof buf, "  %-10s %9s %12s %12s %12s %12s %11s %8s\n", "strategy", "bucketMB", "measured_ms", "predicted_ms",
                "meas_exp_ms", "pred_exp_ms", "peer_lag_ms", "error");
  o << buf;
  for (const auto& s : r.at("strategies")) {
    std::snprintf(buf, sizeof buf, "  %-10s %9.2f %12.3f %12.3f %12.3f %12.3f %11.3f %+7.1f%%\n", s.at("strategy").get<std::string>().c_str(),
                  s.at("bucket_mb").get<double>(), s.at("measured").at("step_ms").get<double>(),
                  s.at("predicted").at("step_ms").get<double>(), s.at("measured").at("exposed_comm_ms").get<double>(),
                  s.at("predicted").at("exposed_comm_ms").get<double>(), s.value("peer_lag_ms", 0.0), s.at("error_pct").get<double>());
    o << buf;
  }
  for (const auto& w : r.value("warnings", nlohmann::json::array())) o << "  warning: " << w.get<std::string>() << "\n";
  const auto& bb = r.at("best_bucket");
  std::snprintf(buf, sizeof buf, "  best bucket (model): %.3g MiB -> %.3f ms, %lld collectives\n", bb.at("bucket_mb").get<double>(),
                bb.at("step_ms").get<double>(), bb.at("collectives").get<long long>());
  o << buf;
  // The whole sweep the optimum came from: how flat the optimum is matters as much as where it is.
  o << "  bucket sweep (model, MiB:ms):";
  for (const auto& p : r.value("bucket_sweep", nlohmann::json::array())) {
    std::snprintf(buf, sizeof buf, " %.3g:%.1f", p.at("bucket_mb").get<double>(), p.at("step_ms").get<double>());
    o << buf;
  }
  o << "\n";
  const auto& v = r.at("bottleneck");
  o << "\nBottleneck: " << v.at("verdict").get<std::string>() << "\n  " << v.at("reason").get<std::string>() << "\n";
  const auto& sc = r.at("scaling");
  o << "\nPredicted scaling (" << sc.at("strategy").get<std::string>() << "; " << sc.at("network").get<std::string>() << "):\n";
  std::snprintf(buf, sizeof buf, "  %6s | %-36s | %-36s\n", "ranks", "strong (global batch fixed)", "weak (batch per rank fixed)");
  o << buf;
  std::snprintf(buf, sizeof buf, "  %6s | %8s %10s %8s %7s | %8s %10s %8s %7s\n", "", "rows", "step_ms", "comm_ms", "eff", "rows",
                "step_ms", "comm_ms", "eff");
  o << buf;
  const auto& st = sc.at("strong");
  const auto& wk = sc.at("weak");
  for (std::size_t i = 0; i < st.size() && i < wk.size(); ++i) {
    std::snprintf(buf, sizeof buf, "  %6d | %8lld %10.3f %8.3f %6.1f%% | %8lld %10.3f %8.3f %6.1f%%\n", st[i].at("ranks").get<int>(),
                  st[i].at("rows_per_rank").get<long long>(), st[i].at("step_ms").get<double>(),
                  st[i].at("exposed_comm_ms").get<double>(), 100.0 * st[i].at("efficiency").get<double>(),
                  wk[i].at("rows_per_rank").get<long long>(), wk[i].at("step_ms").get<double>(),
                  wk[i].at("exposed_comm_ms").get<double>(), 100.0 * wk[i].at("efficiency").get<double>());
    o << buf;
  }
  return o.str();
}

}  // namespace microddp::perf
