// step_model.cpp — the step schedule simulation, bucket-size search and scaling predictions.
#include "perf/step_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/units.hpp"
#include "ddp/bucket_planner.hpp"

namespace microddp::perf {

void fill_layer_times_from_params(StepProfile& p) {
  // Layers in backward order = the order their parameters become ready.
  p.layer_backward_s.clear();
  p.layer_ids.clear();
  std::vector<double> counts;
  for (const auto& info : p.params) {
    if (p.layer_ids.empty() || p.layer_ids.back() != info.layer) {
      p.layer_ids.push_back(info.layer);
      counts.push_back(0);
    }
    counts.back() += static_cast<double>(info.count);
  }
  double total = 0;
  for (double c : counts) total += c;
  for (double c : counts) p.layer_backward_s.push_back(total > 0 ? p.backward_s * c / total : 0.0);
}

std::vector<double> grad_ready_times(const StepProfile& p) {
  MDDP_CHECK(p.layer_backward_s.size() == p.layer_ids.size(), "step profile: layer times and ids differ in length");
  // begin[i]: when layer i's backward starts. Within a layer (model/mlp.cpp) the bias gradient comes
  // first (cheap), then the dW GEMM raises the weight's grad_ready, then the dX GEMM (same FLOPs as
  // dW) runs; layer 0 has no dX. So bias is ready at the layer's start and the weight after half of
  // the layer's time (all of it for layer 0).
  std::vector<double> begin(p.layer_ids.size());
  double sum = 0;
  for (double s : p.layer_backward_s) sum += s;
  // Backward time outside the per-layer events (the loss gradient) happens before the first layer.
  double t = std::max(0.0, p.backward_s - sum);
  for (std::size_t i = 0; i < begin.size(); ++i) {
    begin[i] = t;
    t += p.layer_backward_s[i];
  }
  std::vector<double> ready;
  ready.reserve(p.params.size());
  for (const auto& info : p.params) {
    double r = p.backward_s;
    for (std::size_t i = 0; i < p.layer_ids.size(); ++i) {
      if (p.layer_ids[i] == info.layer) {
        const double f = info.is_bias ? 0.0 : (info.layer > 0 ? 0.5 : 1.0);
        r = begin[i] + f * p.layer_backward_s[i];
        break;
      }
    }
    ready.push_back(r);
  }
  return ready;
}

namespace {

// Bytes a gradient collective moves for `count` elements.
double bytes_of(std::int64_t count) { return static_cast<double>(count * model::kParamElementBytes); }

StepPrediction simulate_async(const StepProfile& prof, const std::vector<ddp::Bucket>& plan,
                              const AllReduceTime& allreduce) {
  const std::vector<double> ready = grad_ready_times(prof);
  StepPrediction r;
  double link_free = 0;
  double streamed = 0;  // bytes of the current busy period
  for (const auto& b : plan) {
    BucketTiming t;
    t.bytes = static_cast<double>(b.bytes());
    for (int p = b.first_param; p < b.end_param; ++p)
      t.ready_s = std::max(t.ready_s, ready[static_cast<std::size_t>(p)]);
    if (prof.time_sliced) t.ready_s = std::max(t.ready_s, prof.backward_s);  // peers run once backward is over
    t.ready_s += prof.peer_lag_s;  // the slowest rank is ready this much later
    t.start_s = std::max(t.ready_s, link_free);
    // A shaped link's busy period streams as one transfer (step_model.hpp): an idle gap refills the
    // token bucket for the fraction gap / T(streamed) of the bytes streamed so far.
    if (const double gap = t.start_s - link_free; gap > 0 && streamed > 0) {
      const double busy = allreduce(streamed);
      streamed = gap < busy ? streamed * (1.0 - gap / busy) : 0.0;
    }
    const double cost = streamed > 0 ? allreduce.streamed(t.bytes, streamed) : allreduce(t.bytes);
    streamed += t.bytes;
    t.end_s = t.start_s + cost;
    link_free = t.end_s;
    r.comm_total_s += cost;
    r.buckets.push_back(t);
  }
  r.collectives = static_cast<std::int64_t>(plan.size());
  r.exposed_comm_s = std::max(0.0, link_free - prof.backward_s);
  return r;
}

}  // namespace

StepPrediction predict_step(const StepProfile& prof, ddp::Strategy strategy, const AllReduceTime& fp32_allreduce,
                            double bucket_cap_bytes, double first_bucket_cap_bytes) {
  // Compression: the strategy's fp32 collectives carry wire_ratio times the bytes.
  const AllReduceTime allreduce{[&](double bytes) { return fp32_allreduce(bytes * prof.wire_ratio); },
                                [&](double bytes, double before) {
                                  return fp32_allreduce.streamed(bytes * prof.wire_ratio, before * prof.wire_ratio);
                                }};
  StepPrediction r;
  // The strategy's bucket plan (its row; the caps go in as MiB, exactly: a power-of-two division).
  const ddp::StrategyRow& row = ddp::strategy_row(strategy);
  const ddp::GradSyncOptions caps{bucket_cap_bytes / core::kMiB, first_bucket_cap_bytes / core::kMiB};
  const std::vector<ddp::Bucket> plan = ddp::strategy_plan(strategy, prof.params, model::flat_count(prof.params), caps);
  if (row.launch == ddp::Launch::AfterBackward) {
    // One after the other, after backward: one busy period (a shaped link streams them as one transfer).
    for (double before = 0; const auto& b : plan) {
      const double bytes = bytes_of(b.count);
      r.comm_total_s += before > 0 ? allreduce.streamed(bytes, before) : allreduce(bytes);
      before += bytes;
    }
    r.collectives = static_cast<std::int64_t>(plan.size());
    r.exposed_comm_s = prof.peer_lag_s + r.comm_total_s;
  } else {
    r = simulate_async(prof, plan, allreduce);
  }
  if (row.reads_bucket_caps) r.bucket_bytes = bucket_cap_bytes;
  r.strategy = strategy;
  r.step_s = prof.data_s + prof.forward_s + prof.backward_s + r.exposed_comm_s + prof.loss_sync_s + prof.optimizer_s +
             prof.other_s + prof.compress_s;
  return r;
}

std::vector<StepPrediction> bucket_sweep(const StepProfile& prof, const AllReduceTime& allreduce) {
  double total = 0;
  for (const auto& p : prof.params) total += bytes_of(p.count);
  std::vector<double> caps;
  for (double c = 64.0 * 1024; c < total; c *= 2) caps.push_back(c);
  caps.push_back(std::max(total, 4.0));
  std::vector<StepPrediction> out;
  for (double cap : caps) out.push_back(predict_step(prof, ddp::Strategy::Bucketed, allreduce, cap));
  return out;
}

StepPrediction best_bucket(const std::vector<StepPrediction>& sweep) {
  StepPrediction best;
  bool have = false;
  for (const StepPrediction& p : sweep) {
    // 0.1% tolerance: among (near-)equal predictions prefer the larger bucket (fewer collectives).
    if (!have || p.step_s <= best.step_s * 1.001) {
      if (!have || p.step_s < best.step_s * 0.999 || p.collectives <= best.collectives) best = p;
      have = true;
    }
  }
  return best;
}

StepProfile rescale_rows(const StepProfile& p, std::int64_t rows) {
  MDDP_CHECK(p.rows_per_rank > 0, "step profile without rows_per_rank");
  StepProfile q = p;
  const double f = static_cast<double>(rows) / static_cast<double>(p.rows_per_rank);
  q.data_s *= f;
  q.forward_s *= f;
  q.backward_s *= f;
  for (double& s : q.layer_backward_s) s *= f;
  q.rows_per_rank = rows;
  return q;
}

namespace {

double predict_at(const ScalingInput& in, const StepProfile& prof, int ranks, double& comm_s) {
  const AllReduceTime ar{[&](double bytes) { return in.allreduce(ranks, bytes); },
                         [&](double bytes, double before) {
                           return in.allreduce_streamed ? in.allreduce_streamed(ranks, bytes, before)
                                                        : in.allreduce(ranks, bytes);
                         }};
  const StepPrediction p = predict_step(prof, in.strategy, ar, in.bucket_cap_bytes);
  // The loss all-reduce (3 doubles: loss and two numerics flags) is latency only; at ranks = 1 it is
  // measured already.
  double loss = prof.loss_sync_s;
  if (ranks > 1) loss = std::max(loss, in.allreduce(ranks, 24.0));
  comm_s = p.exposed_comm_s;
  return p.step_s - prof.loss_sync_s + loss;
}

std::vector<int> rank_counts(int max_ranks) {
  std::vector<int> n;
  for (int r = 1; r <= max_ranks; r *= 2) n.push_back(r);
  return n;
}

}  // namespace

std::vector<ScalingPoint> predict_strong_scaling(const ScalingInput& in, int max_ranks) {
  std::vector<ScalingPoint> out;
  double t1 = 0;
  for (int n : rank_counts(max_ranks)) {
    ScalingPoint pt;
    pt.ranks = n;
    pt.rows_per_rank = std::max<std::int64_t>(1, (in.global_batch + n - 1) / n);
    const StepProfile prof = rescale_rows(in.profile, pt.rows_per_rank);
    pt.step_s = predict_at(in, prof, n, pt.comm_s);
    if (n == 1) t1 = pt.step_s;
    pt.efficiency = t1 / (static_cast<double>(n) * pt.step_s);
    pt.samples_per_s = static_cast<double>(in.global_batch) / pt.step_s;
    out.push_back(pt);
  }
  return out;
}

std::vector<ScalingPoint> predict_weak_scaling(const ScalingInput& in, int max_ranks) {
  std::vector<ScalingPoint> out;
  double t1 = 0;
  for (int n : rank_counts(max_ranks)) {
    ScalingPoint pt;
    pt.ranks = n;
    pt.rows_per_rank = in.profile.rows_per_rank;
    pt.step_s = predict_at(in, in.profile, n, pt.comm_s);
    if (n == 1) t1 = pt.step_s;
    pt.efficiency = t1 / pt.step_s;
    pt.samples_per_s = static_cast<double>(pt.rows_per_rank) * n / pt.step_s;
    out.push_back(pt);
  }
  return out;
}

}  // namespace microddp::perf
