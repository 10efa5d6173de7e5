// analysis.cpp — breakdown, bottleneck verdict, predictions and scaling: the analyze computation.
#include "perf/analysis.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.hpp"
#include "core/units.hpp"
#include "perf/link_classes.hpp"

namespace microddp::perf {

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
  b.comm_busy_ms = m.comm_busy_ms;
  b.comm_queued_ms = m.comm_queued_ms;
  b.collectives = m.collectives;
  b.comm_bytes = m.comm_bytes;
  b.other_ms = m.step_ms - b.phase_sum_ms();
  return b;
}

double gpu_host_ms(const StepStats& m) {
  return std::max(0.0, m.step_ms - (m.data_ms + m.forward_ms + m.backward_ms + m.comm_exposed_ms + m.optimizer_ms));
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
  if (rec.on_gpu()) {  // the loss sync overlaps the device phases: the host's share instead (gpu_host_ms)
    p.loss_sync_s = gpu_host_ms(m) * 1e-3;
    p.other_s = 0;
  }
  p.params = model::param_layout(rec.model);
  p.rows_per_rank = rec.rows_per_rank();
  p.peer_lag_s = run.peer_lag_ms * 1e-3;
  p.time_sliced = rec.time_sliced();
  if (m.compress_ms > 0) {  // a compressed run: its measured wire bytes relative to fp32 and encode cost
    const double fp32_bytes = static_cast<double>(model::flat_count(p.params) * model::kParamElementBytes);
    p.wire_ratio =
        fp32_bytes > 0 && m.comm_bytes > 0 ? std::min(1.0, static_cast<double>(m.comm_bytes) / fp32_bytes) : 1.0;
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

Verdict bottleneck(const RunRecord& rec, const Breakdown& b, const AnalyzeOptions& opt) {
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
  // A CPU's peak scales with the run's BLAS threads; a GPU run is compared with its GPU's peak at the
  // run's precision and its memory bandwidth, which the caller measured or was given (the report
  // names the source either way; never a CPU's numbers for a GPU run).
  char cpu_source[160];
  std::snprintf(cpu_source, sizeof cpu_source, "%g GFLOP/s per thread x %d thread(s), --peak-gflops",
                opt.peak_gflops_per_thread, std::max(1, rec.threads));
  const bool gpu = rec.on_gpu();
  v.peak_gflops = gpu ? opt.device_peak_gflops : opt.peak_gflops_per_thread * std::max(1, rec.threads);
  v.peak_source = gpu ? (opt.device_peak_source.empty() ? std::string("unknown") : opt.device_peak_source)
                      : std::string(cpu_source);
  const double mem_gbytes_s = gpu ? opt.device_mem_gbytes_s : opt.mem_gbytes_s;
  v.memory_source = gpu ? (opt.device_mem_source.empty() ? std::string("unknown") : opt.device_mem_source)
                        : std::string("--mem-gbps");
  // Adam/AdamW read p, g, m, v and write p, m, v: 28 bytes per parameter; SGD(+momentum) ~16.
  const double opt_bytes = (rec.optimizer == "sgd" ? 16.0 : 28.0) * total;
  v.optimizer_gbytes_s = b.optimizer_ms > 0 ? opt_bytes / (b.optimizer_ms * 1e-3) * 1e-9 : 0;
  v.memory_gbytes_s = mem_gbytes_s;
  // Over busy time: launch -> completion includes queueing, which would understate the rate.
  v.comm_gbytes_s = b.comm_busy_ms > 0 ? static_cast<double>(b.comm_bytes) / (b.comm_busy_ms * 1e-3) * 1e-9 : 0;
  const double step = std::max(b.step_ms, 1e-12);
  v.compute_pct = 100.0 * compute_ms / step;
  v.communication_pct = 100.0 * (b.exposed_ms + (gpu ? 0.0 : b.loss_sync_ms)) / step;
  v.memory_pct = 100.0 * (b.optimizer_ms + b.data_ms) / step;
  const double host_ms = gpu ? std::max(0.0, b.step_ms - (b.data_ms + compute_ms + b.exposed_ms + b.optimizer_ms)) : 0.0;
  v.host_pct = 100.0 * host_ms / step;
  std::ostringstream why;
  char buf[1024];
  if (gpu && v.host_pct > v.compute_pct && v.host_pct > v.communication_pct && v.host_pct > v.memory_pct) {
    v.kind = "host-bound";
    std::snprintf(buf, sizeof buf,
                  "the GPU's phases leave %.1f%% of the step (%.3f of %.3f ms) to the host: kernel launches, the "
                  "step's synchronisation and the verdict's all-reduce (a CUDA graph, train --cuda-graph on, "
                  "replays the launches); forward+backward %.1f%% at %.1f GFLOP/s (%.0f%% of %.0f GFLOP/s peak: %s), "
                  "exposed communication %.1f%%",
                  v.host_pct, host_ms, b.step_ms, v.compute_pct, v.gemm_gflops,
                  v.peak_gflops > 0 ? 100.0 * v.gemm_gflops / v.peak_gflops : 0.0, v.peak_gflops,
                  v.peak_source.c_str(), v.communication_pct);
  } else if (v.communication_pct >= v.compute_pct && v.communication_pct >= v.memory_pct) {
    v.kind = "communication-bound";
    std::snprintf(buf, sizeof buf,
                  "exposed communication is %.1f%% of the step (%.3f of %.3f ms); all-reduce moves %.2f MiB/step at "
                  "%.2f GB/s algorithm bandwidth",
                  v.communication_pct, b.exposed_ms + (gpu ? 0.0 : b.loss_sync_ms), b.step_ms,
                  static_cast<double>(b.comm_bytes) / (1 << 20), v.comm_gbytes_s);
  } else if (v.memory_pct > v.compute_pct) {
    v.kind = "memory-bound";
    std::snprintf(
        buf, sizeof buf,
        "optimizer + data take %.1f%% of the step; the optimizer streams %.1f MB at %.1f GB/s (reference %.1f "
        "GB/s: %s) while forward+backward reach %.1f GFLOP/s",
        v.memory_pct, opt_bytes * 1e-6, v.optimizer_gbytes_s, mem_gbytes_s, v.memory_source.c_str(), v.gemm_gflops);
  } else {
    v.kind = "compute-bound";
    std::snprintf(buf, sizeof buf,
                  "forward+backward take %.1f%% of the step at %.1f GFLOP/s (%.0f%% of %.0f GFLOP/s peak: %s); "
                  "exposed communication %.1f%%, optimizer+data %.1f%%",
                  v.compute_pct, v.gemm_gflops, v.peak_gflops > 0 ? 100.0 * v.gemm_gflops / v.peak_gflops : 0.0,
                  v.peak_gflops, v.peak_source.c_str(), v.communication_pct, v.memory_pct);
  }
  v.reason = buf;
  return v;
}

double model_allreduce_s(const CommModel& m, const std::string& backend, int ranks, double bytes, bool async,
                         double streamed_before) {
  if (ranks <= 1) return 0.0;
  const ModelEntry* e = async ? m.find(backend + "/async") : nullptr;
  if (e == nullptr) {
    e = m.find(backend, Collective::AllReduce);
    MDDP_USAGE_CHECK(e != nullptr, "the communication model has no all_reduce entry for backend '"
                                       << backend << "' (source: " << m.source << ")");
  }
  return streamed_before > 0 ? e->streamed_time_s(ranks, bytes, streamed_before) : e->time_s(ranks, bytes);
}

AllReduceTime model_allreduce(const CommModel& m, const std::string& backend, int ranks, bool async,
                              bool burst_credit_refills_when_idle) {
  if (!burst_credit_refills_when_idle)
    return [&m, backend, ranks, async](double bytes) { return model_allreduce_s(m, backend, ranks, bytes, async); };
  return {[&m, backend, ranks, async](double bytes) { return model_allreduce_s(m, backend, ranks, bytes, async); },
          [&m, backend, ranks, async](double bytes, double before) {
            return model_allreduce_s(m, backend, ranks, bytes, async, before);
          }};
}

namespace {

// Bytes per MiB: --bucket-mb and the report speak MiB, the step model bytes.
using core::kMiB;

// The node's layout (docs/performance.md): compute threads alone exceed the cores (time slicing,
// which the model handles), or they fill them and leave none for the communication threads
// (measured at 2 ranks x 1 thread on 2 cores: overlap 133-136 ms per step with Open MPI's busy
// polling, 98-106 ms with mpi_yield_when_idle=1; the model assumes the latter).
std::vector<std::string> node_warnings(const RunRecord& rec) {
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
  if (node.str().empty()) return {};
  return {node.str()};
}

// Scaling: user network (α, β from --link-gbps/--latency-us; γ = 0 unless a reduction rate is
// given: the fits fold the reduction into an effective β, docs/performance.md) or the fitted model
// of this backend. Scaling assumes a core per compute thread and no straggler: this node's time
// slicing and lag say nothing about another rank count's nodes.
ScalingResult predict_scaling(const RunRecord& rec, const CommModel& model, const AnalyzeOptions& opt,
                              const StepProfile& reference_profile) {
  MDDP_USAGE_CHECK(std::isfinite(opt.scaling_bucket_mb) && opt.scaling_bucket_mb > 0,
                   "--scaling-bucket-mb must be > 0, got " << opt.scaling_bucket_mb);
  ScalingInput in;
  in.profile = reference_profile;
  in.profile.peer_lag_s = 0;
  in.profile.time_sliced = false;
  in.global_batch = rec.global_batch;
  in.strategy = opt.scaling_strategy;
  in.bucket_cap_bytes = opt.scaling_bucket_mb * kMiB;
  ScalingResult s;
  if (opt.link_gbps > 0) {
    MDDP_USAGE_CHECK(std::isfinite(opt.reduce_gbytes_s) && opt.reduce_gbytes_s >= 0,
                     "the local reduction rate must be >= 0 GB/s, got " << opt.reduce_gbytes_s);
    const AlphaBeta ab =
        AlphaBeta::from_link(opt.link_gbps, opt.latency_us, opt.reduce_gbytes_s > 0 ? 1e-9 / opt.reduce_gbytes_s : 0.0);
    in.allreduce = [ab](int ranks, double bytes) {
      return ab.time_s(cost_coefficients(Collective::AllReduce, Algorithm::Ring, ranks, bytes));
    };
    char buf[192];
    if (opt.reduce_gbytes_s > 0) {
      std::snprintf(buf, sizeof buf,
                    "ring all-reduce over %.3g Gbit/s links, %.3g us latency, local reduction %.3g GB/s", opt.link_gbps,
                    opt.latency_us, opt.reduce_gbytes_s);
    } else {
      std::snprintf(buf, sizeof buf,
                    "ring all-reduce over %.3g Gbit/s links, %.3g us latency (local reduction not counted)",
                    opt.link_gbps, opt.latency_us);
    }
    s.network = buf;
    s.reduce_gbytes_s = opt.reduce_gbytes_s;
  } else if (const ModelEntry* e = model.find(rec.backend)) {
    // The backend's fit, extrapolated as a ring all-reduce (the entry's own time formulas).
    ModelEntry ring = *e;
    ring.collective = Collective::AllReduce;
    ring.algorithm = Algorithm::Ring;
    in.allreduce = [ring](int ranks, double bytes) { return ring.time_s(ranks, bytes); };
    if (opt.burst_credit_refills_when_idle)
      in.allreduce_streamed = [ring](int ranks, double bytes, double before) {
        return ring.streamed_time_s(ranks, bytes, before);
      };
    s.network = "fitted model of backend '" + rec.backend + "' extrapolated as a ring all-reduce";
    s.model_warning = fit_warning(ring.fit);
  } else {
    in.allreduce = [](int, double) { return 0.0; };
    s.network = "no communication model: communication assumed free (give --model/--bench or --link-gbps)";
  }
  s.strategy = opt.scaling_strategy;
  s.bucket_mb = opt.scaling_bucket_mb;
  s.global_batch = rec.global_batch;
  s.rows_per_rank_weak = reference_profile.rows_per_rank;
  s.strong = predict_strong_scaling(in, opt.max_ranks);
  s.weak = predict_weak_scaling(in, opt.max_ranks);
  return s;
}

}  // namespace

Analysis analyze(const RunRecord& rec, const CommModel& model, const AnalyzeOptions& opt) {
  MDDP_USAGE_CHECK(!rec.runs.empty(), "the run record holds no runs");
  Analysis out;
  out.record = rec;
  out.model_source = model.source;
  out.burst_credit_refills_when_idle = opt.burst_credit_refills_when_idle;
  out.comm_model = model.entries;
  out.warnings = node_warnings(rec);
  // A poor fit of the run's backend (link_classes.hpp: low R2 or a large residual) is named next to
  // every prediction made from it, in both printers.
  if (const ModelEntry* e = model.find(rec.backend)) out.model_warning = fit_warning(e->fit);

  const std::string& backend = rec.backend;
  const int n = rec.ranks;
  double worst_err = 0;
  const StrategyRun* reference = &rec.runs.front();
  for (const auto& run : rec.runs) {
    StrategyResult r;
    r.strategy = run.strategy;
    r.bucket_mb = run.bucket_mb;
    r.steps = run.steps.size();
    r.measured = breakdown_of(run.mean());
    r.peer_lag_ms = run.peer_lag_ms;
    const StepProfile prof = profile_of(rec, run);
    const bool async = ddp::is_async(run.strategy);
    const AllReduceTime ar = model_allreduce(model, backend, n, async, opt.burst_credit_refills_when_idle);
    r.predicted = predict_step(prof, run.strategy, ar, run.bucket_mb * kMiB);
    const double err =
        r.measured.step_ms > 0 ? (r.predicted.step_s * 1e3 - r.measured.step_ms) / r.measured.step_ms : 0.0;
    worst_err = std::max(worst_err, std::abs(err));
    r.error_pct = 100.0 * err;
    out.strategies.push_back(r);
    // The reference run: the last one with capped buckets, else the last one launched during backward.
    if (ddp::strategy_row(run.strategy).reads_bucket_caps ||
        (!ddp::strategy_row(reference->strategy).reads_bucket_caps && ddp::is_async(run.strategy))) {
      reference = &run;
    }
  }
  out.max_abs_error_pct = 100.0 * worst_err;

  const StepProfile rprof = profile_of(rec, *reference);
  out.reference = reference->strategy;
  out.reference_peer_lag_ms = reference->peer_lag_ms;
  out.breakdown = breakdown_of(reference->mean());
  out.bottleneck = bottleneck(rec, out.breakdown, opt);

  // Every strategy predicted from the reference compute (what-if at this rank count).
  const double what_if_cap = reference->bucket_mb > 0 ? reference->bucket_mb * kMiB : 25.0 * kMiB;
  for (const ddp::Strategy s : ddp::kStrategies) {
    const bool async = ddp::is_async(s);
    const AllReduceTime ar = model_allreduce(model, backend, n, async, opt.burst_credit_refills_when_idle);
    out.predicted_strategies.push_back(predict_step(rprof, s, ar, what_if_cap));
  }
  const AllReduceTime async_ar = model_allreduce(model, backend, n, /*async=*/true, opt.burst_credit_refills_when_idle);
  out.bucket_sweep = bucket_sweep(rprof, async_ar);
  out.best_bucket = best_bucket(out.bucket_sweep);
  out.scaling = predict_scaling(rec, model, opt, rprof);
  return out;
}

}  // namespace microddp::perf
