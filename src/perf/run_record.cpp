// run_record.cpp — run records: JSON out and in (checked), and the `train --metrics` reader.
#include "perf/run_record.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/error.hpp"
#include "core/precision.hpp"
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
    m.comm_busy_ms += s.comm_busy_ms;
    m.comm_queued_ms += s.comm_queued_ms;
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
  m.comm_busy_ms /= n;
  m.comm_queued_ms /= n;
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
  // Records written before start-of-execution timestamps existed have no busy time: the
  // launch -> completion sum stands in (an upper bound, so their overlap reads too high) and
  // queueing is unknown (0).
  s.comm_busy_ms = j.value("comm_busy_ms", s.comm_total_ms);
  s.comm_queued_ms = j.value("comm_queued_ms", 0.0);
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
    runs.push_back({{"strategy", ddp::strategy_name(run.strategy)},
                    {"bucket_mb", run.bucket_mb},
                    {"layer_backward_ms", run.layer_backward_ms},
                    {"layer_ids", run.layer_ids},
                    {"peer_lag_ms", run.peer_lag_ms},
                    {"steps", steps}});
  }
  return {{"type", "microddp_run_record"},
          {"version", 1},
          {"source", r.source},
          {"config", config_json(r)},
          {"runs", runs}};
}

nlohmann::json config_json(const RunRecord& r) {
  return {{"in_dim", r.model.in_dim},
          {"width", r.model.width},
          {"depth", r.model.depth},
          {"classes", r.model.classes},
          {"global_batch", r.global_batch},
          {"ranks", r.ranks},
          {"threads", r.threads},
          {"ranks_per_node", r.ranks_per_node},
          {"cores_per_node", r.cores_per_node},
          {"comm", r.backend},
          {"optimizer", r.optimizer},
          {"device", r.device},
          {"compute", r.compute},
          {"precision", r.precision}};
}

namespace {
// The "config" object of a run record or a metrics summary. The configuration fields come from the
// one table (perf/config_json.hpp; absent ones keep TrainConfig's defaults, which are the course
// model's); the run's facts (ranks, threads, backend, ...) are read here. Returns the whole
// configuration for the callers that need more of it (strategy, bucket size). `where` names the
// record in the error when a field's value is invalid (an unknown strategy).
ddp::TrainConfig config_from_json(const nlohmann::json& c, RunRecord& r, const std::string& where) {
  ddp::TrainConfig cfg;
  try {
    train_config_from_json(c, cfg);
  } catch (const core::UsageError& e) {
    MDDP_USAGE_CHECK(false, where << ": " << e.what());
  }
  r.model = cfg.model;
  if (!c.contains("in_dim")) r.model.in_dim = r.model.width;  // older records: the course model's Linear(d, d)
  r.global_batch = cfg.global_batch;
  r.optimizer = cfg.optimizer.name;
  r.ranks = c.value("ranks", 1);
  r.threads = c.value("threads", 1);
  r.ranks_per_node = std::max(0, c.value("ranks_per_node", 0));
  r.cores_per_node = std::max(0, c.value("cores_per_node", 0));
  r.backend = c.value("comm", std::string("mpi"));
  r.device = c.value("device", std::string("cpu"));
  r.compute = c.value("compute", std::string());
  r.precision = std::string(core::precision_name(cfg.precision));
  return cfg;
}

// The fields of a run record, unchecked (nlohmann throws on a missing or mistyped one).
RunRecord run_record_fields(const nlohmann::json& j) {
  RunRecord r;
  r.source = j.value("source", "");
  config_from_json(j.at("config"), r, "run record");
  for (const auto& x : j.at("runs")) {
    StrategyRun run;
    run.strategy = ddp::parse_strategy(x.at("strategy").get<std::string>(), "strategy in the run record");
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
  MDDP_USAGE_CHECK(r.device == "cpu" || r.device == "cuda",
                   where << ": device '" << r.device << "' is not cpu or cuda");
  MDDP_USAGE_CHECK(r.threads >= 1 && r.threads <= 4096, where << ": threads " << r.threads << " is out of range");
  MDDP_USAGE_CHECK(r.global_batch >= 1 && r.global_batch <= (std::int64_t{1} << 40),
                   where << ": global_batch " << r.global_batch << " is out of range");
  for (const auto& run : r.runs) {
    MDDP_USAGE_CHECK(
        run.layer_backward_ms.size() == run.layer_ids.size(),
        where << ": " << run.layer_backward_ms.size() << " layer times for " << run.layer_ids.size() << " layer ids");
    for (std::size_t i = 0; i < run.layer_ids.size(); ++i) {
      MDDP_USAGE_CHECK(run.layer_ids[i] >= 0 && run.layer_ids[i] <= m.depth &&
                           std::isfinite(run.layer_backward_ms[i]) && run.layer_backward_ms[i] >= 0,
                       where << ": layer entry " << i << " (id " << run.layer_ids[i] << ", " << run.layer_backward_ms[i]
                             << " ms) does not fit a model of depth " << m.depth);
    }
    MDDP_USAGE_CHECK(std::isfinite(run.bucket_mb) && run.bucket_mb >= 0, where << ": bucket_mb " << run.bucket_mb);
    MDDP_USAGE_CHECK(std::isfinite(run.peer_lag_ms) && run.peer_lag_ms >= 0,
                     where << ": peer_lag_ms " << run.peer_lag_ms << " (must be finite and >= 0)");
    for (const auto& s : run.steps) {
      for (double v : {s.step_ms, s.data_ms, s.forward_ms, s.backward_ms, s.optimizer_ms, s.loss_sync_ms,
                       s.comm_total_ms, s.comm_exposed_ms, s.comm_busy_ms, s.comm_queued_ms}) {
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
      // A file may hold several runs (train --metrics appends): the last one counts.
      if (type == "start") {
        steps.clear();
        have_summary = false;
      }
      if (type == "step") steps.push_back(stats_from_json(j));
      if (type == "summary") {
        const ddp::TrainConfig cfg = config_from_json(j.at("config"), r, "'" + path + "'");
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

}  // namespace microddp::perf
