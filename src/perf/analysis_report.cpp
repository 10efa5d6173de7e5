// analysis_report.cpp — the text report and the JSON of an Analysis (see analysis_report.hpp).
#include "perf/analysis_report.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/units.hpp"
#include "perf/comm_model_io.hpp"
#include "perf/link_classes.hpp"

namespace microddp::perf {

namespace {

using core::kMiB;

// "bucketed 25 MiB" (the cap matters for bucketed only) or the strategy's name.
std::string scaling_label(const ScalingResult& s) {
  std::string label(ddp::strategy_name(s.strategy));
  if (!ddp::strategy_row(s.strategy).reads_bucket_caps) return label;
  char mib[32];
  std::snprintf(mib, sizeof mib, "%g", s.bucket_mb);
  return label + " " + mib + " MiB";
}

// On a GPU (gpu = true) the loss sync contains the device phases: the overhead is the exposed time
// alone, as the text report says.
nlohmann::json breakdown_json(const Breakdown& b, bool gpu) {
  const double overhead_pct =
      gpu ? (b.step_ms > 0 ? 100.0 * b.exposed_ms / b.step_ms : 0.0) : b.comm_overhead_pct();
  return {{"step_ms", b.step_ms},
          {"data_ms", b.data_ms},
          {"forward_ms", b.forward_ms},
          {"backward_ms", b.backward_ms},
          {"exposed_comm_ms", b.exposed_ms},
          {"loss_sync_ms", b.loss_sync_ms},
          {"optimizer_ms", b.optimizer_ms},
          {"untimed_ms", b.other_ms},
          {"phase_sum_ms", b.phase_sum_ms()},
          {"comm_total_ms", b.comm_total_ms},
          {"comm_busy_ms", b.comm_busy_ms},
          {"comm_queued_ms", b.comm_queued_ms},
          {"collectives", b.collectives},
          {"comm_bytes", b.comm_bytes},
          {"comm_overhead_pct", overhead_pct},
          {"overlap_pct", b.overlap_pct()}};
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

// A prediction as the what-if list, the bucket sweep and the best bucket show it.
nlohmann::json prediction_json(const StepPrediction& p) {
  return {{"step_ms", p.step_s * 1e3}, {"exposed_comm_ms", p.exposed_comm_s * 1e3}, {"collectives", p.collectives}};
}

}  // namespace

nlohmann::json to_json(const Analysis& a) {
  nlohmann::json out;
  out["type"] = "microddp_analysis";
  out["source"] = a.record.source;
  out["model_source"] = a.model_source;
  out["burst_credit"] = a.burst_credit_refills_when_idle ? "idle" : "every";
  out["config"] = config_json(a.record);
  nlohmann::json comm = nlohmann::json::array();
  for (const auto& e : a.comm_model) {
    comm.push_back({{"backend", e.backend},
                    {"collective", collective_name(e.collective)},
                    {"algorithm", algorithm_name(e.algorithm)},
                    {"alpha_us", e.fit.model.alpha_s * 1e6},
                    {"beta_ns_per_byte", e.fit.model.beta_s_per_byte * 1e9},
                    {"r2", e.fit.r2},
                    {"max_rel_residual", e.fit.max_rel_residual},
                    {"line_rms_rel_residual", e.fit.line_rms_rel_residual},
                    {"rms_rel_residual", e.fit.rms_rel_residual},
                    {"regimes", regimes_json(e.fit.regimes)},
                    {"warning", fit_warning(e.fit)}});
  }
  out["comm_model"] = comm;
  out["model_warning"] = a.model_warning;
  out["warnings"] = a.warnings;
  nlohmann::json strategies = nlohmann::json::array();
  for (const auto& s : a.strategies) {
    const StepPrediction& p = s.predicted;
    strategies.push_back({{"strategy", ddp::strategy_name(s.strategy)},
                          {"bucket_mb", s.bucket_mb},
                          {"steps", s.steps},
                          {"measured", breakdown_json(s.measured, a.record.on_gpu())},
                          {"peer_lag_ms", s.peer_lag_ms},
                          {"predicted",
                           {{"step_ms", p.step_s * 1e3},
                            {"exposed_comm_ms", p.exposed_comm_s * 1e3},
                            {"comm_total_ms", p.comm_total_s * 1e3},
                            {"collectives", p.collectives},
                            {"overlap_pct", 100.0 * p.overlap()},
                            {"model_warning", a.model_warning}}},
                          {"error_pct", s.error_pct}});
  }
  out["strategies"] = strategies;
  out["max_abs_error_pct"] = a.max_abs_error_pct;
  out["breakdown"] = breakdown_json(a.breakdown, a.record.on_gpu());
  out["breakdown"]["strategy"] = ddp::strategy_name(a.reference);
  out["breakdown"]["peer_lag_ms"] = a.reference_peer_lag_ms;
  const Verdict& v = a.bottleneck;
  out["bottleneck"] = {{"verdict", v.kind},
                       {"compute_pct", v.compute_pct},
                       {"communication_pct", v.communication_pct},
                       {"memory_pct", v.memory_pct},
                       {"host_pct", v.host_pct},
                       {"gemm_gflops", v.gemm_gflops},
                       {"peak_gflops", v.peak_gflops},
                       {"peak_source", v.peak_source},
                       {"memory_reference_source", v.memory_source},
                       {"optimizer_gbytes_s", v.optimizer_gbytes_s},
                       {"memory_reference_gbytes_s", v.memory_gbytes_s},
                       {"comm_algbw_gbytes_s", v.comm_gbytes_s},
                       {"reason", v.reason}};
  nlohmann::json whatif = nlohmann::json::array();
  for (const StepPrediction& p : a.predicted_strategies) {
    nlohmann::json w = prediction_json(p);
    w["strategy"] = ddp::strategy_name(p.strategy);
    w["model_warning"] = a.model_warning;
    whatif.push_back(w);
  }
  out["predicted_strategies"] = whatif;
  nlohmann::json sweep = nlohmann::json::array();
  for (const StepPrediction& p : a.bucket_sweep) {
    nlohmann::json s = prediction_json(p);
    s["bucket_mb"] = p.bucket_bytes / kMiB;
    sweep.push_back(s);
  }
  out["bucket_sweep"] = sweep;
  out["best_bucket"] = prediction_json(a.best_bucket);
  out["best_bucket"]["bucket_mb"] = a.best_bucket.bucket_bytes / kMiB;
  out["best_bucket"]["model_warning"] = a.model_warning;
  const ScalingResult& sc = a.scaling;
  out["scaling"] = {{"network", sc.network},
                    {"model_warning", sc.model_warning},
                    {"reduce_gbytes_s", sc.reduce_gbytes_s},
                    {"strategy", scaling_label(sc)},
                    {"global_batch", sc.global_batch},
                    {"rows_per_rank_weak", sc.rows_per_rank_weak},
                    {"strong", scaling_json(sc.strong)},
                    {"weak", scaling_json(sc.weak)}};
  return out;
}

std::string format_report(const Analysis& a) {
  std::ostringstream o;
  char buf[512];
  const RunRecord& c = a.record;
  std::snprintf(buf, sizeof buf,
                "# microddp analyze: %s\n#   model in=%lld width=%lld depth=%lld classes=%lld, global batch %lld, %d "
                "rank(s) x %s, backend %s\n",
                c.source.c_str(), static_cast<long long>(c.model.in_dim), static_cast<long long>(c.model.width),
                static_cast<long long>(c.model.depth), static_cast<long long>(c.model.classes),
                static_cast<long long>(c.global_batch), c.ranks,
                c.on_gpu() ? "1 GPU (device cuda)" : (std::to_string(c.threads) + " thread(s) (device cpu)").c_str(),
                c.backend.c_str());
  o << buf;
  if (!c.compute.empty() || c.precision != "fp32")
    o << "#   compute: " << (c.compute.empty() ? c.device : c.compute) << "; precision " << c.precision << "\n";
  o << "# communication model (" << a.model_source << ")\n";
  for (const auto& e : a.comm_model) {
    const FitResult& f = e.fit;
    const std::string backend = e.backend, collective(collective_name(e.collective)),
                      algorithm(algorithm_name(e.algorithm));
    const double alpha_us = f.model.alpha_s * 1e6, beta_ns = f.model.beta_s_per_byte * 1e9;
    const double gbytes_s = beta_ns > 0 ? 1.0 / beta_ns : 0.0;
    if (f.regimes.empty()) {
      std::snprintf(
          buf, sizeof buf,
          "#   %-12s %-14s %-6s alpha %8.2f us  beta %8.4f ns/B (%6.2f GB/s)  R2 %.4f  max rel resid %.1f%%\n",
          backend.c_str(), collective.c_str(), algorithm.c_str(), alpha_us, beta_ns, gbytes_s, f.r2,
          100.0 * f.max_rel_residual);
      o << buf;
      if (const std::string w = fit_warning(f); !w.empty()) o << "#   (!) " << w << "\n";
      continue;
    }
    // The first line is the one-line fit; predictions use the size regimes below it.
    std::snprintf(
        buf, sizeof buf,
        "#   %-12s %-14s %-6s alpha %8.2f us  beta %8.4f ns/B (%6.2f GB/s)  one line: rms rel resid %.1f%%\n"
        "#     %zu size regimes (used for predictions): R2 %.4f  rms rel resid %.1f%%  max rel resid %.1f%%\n",
        backend.c_str(), collective.c_str(), algorithm.c_str(), alpha_us, beta_ns, gbytes_s,
        100.0 * f.line_rms_rel_residual, f.regimes.size(), f.r2, 100.0 * f.rms_rel_residual,
        100.0 * f.max_rel_residual);
    o << buf;
    for (const SizeRegime& g : f.regimes) {
      const double beta = g.model.beta_s_per_byte * 1e9;
      char credit[48] = "";
      if (g.has_burst_credit()) std::snprintf(credit, sizeof credit, "  burst credit %.2f us", g.model.credit_s * 1e6);
      std::snprintf(buf, sizeof buf, "#       from %10.0f B: alpha %8.2f us  beta %8.4f ns/B (%6.2f GB/s)%s\n",
                    g.from_bytes, g.model.alpha_s * 1e6, beta, beta > 0 ? 1.0 / beta : 0.0, credit);
      o << buf;
    }
    if (f.has_burst_credit())
      o << "#   " << kBurstCreditNote
        << (a.burst_credit_refills_when_idle
                ? "; used as a shaped link's (--burst-credit idle): collectives that follow each other without a gap "
                  "stream as one transfer\n"
                : "; every collective gets it (--burst-credit every; a shaped link: idle)\n");
    if (const std::string w = fit_warning(f); !w.empty()) o << "#   (!) " << w << "\n";
  }
  const Breakdown& b = a.breakdown;
  std::snprintf(
      buf, sizeof buf,
      "\nStep breakdown (%s, means over timed steps, ms):\n  %-16s %9.3f\n  %-16s %9.3f\n  %-16s %9.3f\n  %-16s %9.3f\n"
      "  %-16s %9.3f\n  %-16s %9.3f\n  %-16s %9.3f\n  %-16s %9.3f  (= step - sum of phases)\n  %-16s %9.3f\n",
      std::string(ddp::strategy_name(a.reference)).c_str(), "data", b.data_ms, "forward", b.forward_ms, "backward",
      b.backward_ms, "exposed comm", b.exposed_ms, "loss sync", b.loss_sync_ms, "optimizer", b.optimizer_ms,
      "sum of phases", b.phase_sum_ms(), "untimed", b.other_ms, "step", b.step_ms);
  o << buf;
  if (c.on_gpu()) {
    const double host_ms =
        std::max(0.0, b.step_ms - (b.data_ms + b.forward_ms + b.backward_ms + b.exposed_ms + b.optimizer_ms));
    std::snprintf(buf, sizeof buf,
                  "  on the GPU forward, backward, exposed comm and optimizer are CUDA-event times and the loss sync "
                  "is the host's wait for them (it contains them: the phases overlap); the host's share, step - "
                  "device phases: %.3f ms\n",
                  host_ms);
    o << buf;
  }
  // On a GPU the loss sync contains the device phases: only the exposed communication is overhead.
  std::snprintf(buf, sizeof buf,
                "  communication overhead %.1f%% of the step; overlap %.1f%% (1 - exposed / busy: busy %.3f ms, "
                "queued %.3f ms, %lld collectives)\n",
                c.on_gpu() ? (b.step_ms > 0 ? 100.0 * b.exposed_ms / b.step_ms : 0.0) : b.comm_overhead_pct(),
                b.overlap_pct(), b.comm_busy_ms, b.comm_queued_ms,
                static_cast<long long>(b.collectives));
  o << buf;
  std::snprintf(buf, sizeof buf,
                "  the slowest rank finishes backward %.3f ms later (mean per step; 0 if not recorded)\n",
                a.reference_peer_lag_ms);
  o << buf;
  o << "\nPredicted vs measured step time:\n";
  std::snprintf(buf, sizeof buf, "  %-10s %9s %12s %12s %12s %12s %11s %8s\n", "strategy", "bucketMB", "measured_ms",
                "predicted_ms", "meas_exp_ms", "pred_exp_ms", "peer_lag_ms", "error");
  o << buf;
  for (const auto& s : a.strategies) {
    std::snprintf(buf, sizeof buf, "  %-10s %9.2f %12.3f %12.3f %12.3f %12.3f %11.3f %+7.1f%%\n",
                  std::string(ddp::strategy_name(s.strategy)).c_str(), s.bucket_mb, s.measured.step_ms,
                  s.predicted.step_s * 1e3, s.measured.exposed_ms, s.predicted.exposed_comm_s * 1e3, s.peer_lag_ms,
                  s.error_pct);
    o << buf;
  }
  if (!a.model_warning.empty()) o << "  (!) predictions above and below from a " << a.model_warning << "\n";
  for (const auto& w : a.warnings) o << "  warning: " << w << "\n";
  const StepPrediction& bb = a.best_bucket;
  std::snprintf(buf, sizeof buf, "  best bucket (model): %.3g MiB -> %.3f ms, %lld collectives\n",
                bb.bucket_bytes / kMiB, bb.step_s * 1e3, static_cast<long long>(bb.collectives));
  o << buf;
  // The whole sweep the optimum came from: how flat the optimum is matters as much as where it is.
  o << "  bucket sweep (model, MiB:ms):";
  for (const StepPrediction& p : a.bucket_sweep) {
    std::snprintf(buf, sizeof buf, " %.3g:%.1f", p.bucket_bytes / kMiB, p.step_s * 1e3);
    o << buf;
  }
  o << "\n";
  o << "\nBottleneck: " << a.bottleneck.kind << "\n  " << a.bottleneck.reason << "\n";
  {
    const Verdict& v = a.bottleneck;
    std::snprintf(buf, sizeof buf, "  references: compute peak %.1f GFLOP/s (%s); memory %.1f GB/s (%s)\n",
                  v.peak_gflops, v.peak_source.c_str(), v.memory_gbytes_s, v.memory_source.c_str());
    o << buf;
  }
  const ScalingResult& sc = a.scaling;
  o << "\nPredicted scaling (" << scaling_label(sc) << "; " << sc.network << "):\n";
  if (!sc.model_warning.empty()) o << "  (!) " << sc.model_warning << "\n";
  std::snprintf(buf, sizeof buf, "  %6s | %-36s | %-36s\n", "ranks", "strong (global batch fixed)",
                "weak (batch per rank fixed)");
  o << buf;
  std::snprintf(buf, sizeof buf, "  %6s | %8s %10s %8s %7s | %8s %10s %8s %7s\n", "", "rows", "step_ms", "comm_ms",
                "eff", "rows", "step_ms", "comm_ms", "eff");
  o << buf;
  for (std::size_t i = 0; i < sc.strong.size() && i < sc.weak.size(); ++i) {
    const ScalingPoint &st = sc.strong[i], &wk = sc.weak[i];
    std::snprintf(buf, sizeof buf, "  %6d | %8lld %10.3f %8.3f %6.1f%% | %8lld %10.3f %8.3f %6.1f%%\n", st.ranks,
                  static_cast<long long>(st.rows_per_rank), st.step_s * 1e3, st.comm_s * 1e3, 100.0 * st.efficiency,
                  static_cast<long long>(wk.rows_per_rank), wk.step_s * 1e3, wk.comm_s * 1e3, 100.0 * wk.efficiency);
    o << buf;
  }
  return o.str();
}

}  // namespace microddp::perf
