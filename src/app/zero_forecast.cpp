// zero_forecast.cpp — see zero_forecast.hpp.
#include "app/zero_forecast.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "app/model_memory.hpp"
#include "ddp/zero/make_zero_sync.hpp"
#include "ddp/zero/memory_report.hpp"
#include "model/optimizer.hpp"
#include "model/param_layout.hpp"

namespace microddp::app {

std::string zero_forecast(const ddp::TrainConfig& cfg, double bucket_mb, const perf::Analysis& analysis,
                          double memory_limit_mib, int max_ranks) {
  const auto params = model::param_layout(cfg.model);
  const std::int64_t flat = model::flat_count(params);
  const int state_buffers = static_cast<int>(model::optimizer_state_names(cfg.optimizer).size());
  ddp::GradSyncOptions so = cfg.sync_options;
  so.bucket_mb = bucket_mb;
  const double optimizer_ms = analysis.breakdown.optimizer_ms;
  std::vector<std::pair<int, std::pair<double, double>>> strong;  // ranks -> (step_ms, exposed_comm_ms)
  for (const auto& p : analysis.scaling.strong) strong.push_back({p.ranks, {1e3 * p.step_s, 1e3 * p.comm_s}});
  std::ostringstream o;
  char buf[256];
  const double mib = 1.0 / (1 << 20);
  o << "# sharding (--shard; docs/zero.md): bytes per rank (formula over the exact shard plan of bucketed " << bucket_mb
    << " MiB) and predicted step time (strong scaling)";
  if (memory_limit_mib > 0) o << "; --memory-limit " << memory_limit_mib << " MiB";
  o << "\n";
  std::snprintf(buf, sizeof buf, "  %6s %-10s %10s %10s %10s %10s %10s %10s %10s %9s %s\n", "ranks", "shard",
                "params_MiB", "grads_MiB", "optim_MiB", "pool_MiB", "acts_MiB", "total_MiB", "vs_none", "step_ms",
                "fits");
  o << buf;
  for (int n = 1; n <= max_ranks; n *= 2) {
    const std::int64_t rows = (cfg.global_batch + n - 1) / n;
    double ddp_total = 0;
    for (const auto mode :
         {ddp::zero::ShardMode::None, ddp::zero::ShardMode::Optimizer, ddp::zero::ShardMode::Gradients}) {
      const ddp::zero::ShardPlan plan = ddp::zero::plan_for_strategy(ddp::Strategy::Bucketed, so, params, flat, n, 0);
      // ZeRO-2 without accumulation: backward's gradients in the sync's bucket pool (zero_sync.hpp).
      const std::int64_t pool =
          ddp::zero::uses_grad_pool(mode, cfg.accum_steps) ? ddp::zero::ZeroSync::pool_count(plan) : 0;
      const ddp::zero::MemoryReport m = ddp::zero::predict_memory(flat, plan.state_count(), state_buffers, mode,
                                                                  static_cast<std::int64_t>(activation_bytes(cfg.model, rows)), pool);
      const double total = static_cast<double>(m.total()) * mib;
      if (mode == ddp::zero::ShardMode::None) ddp_total = total;
      double step_ms = -1;
      for (const auto& [ranks, t] : strong) {
        if (ranks != n) continue;
        step_ms = t.first;
        if (mode != ddp::zero::ShardMode::None) step_ms += -optimizer_ms * (1.0 - 1.0 / n) + 0.5 * t.second;
      }
      const char* fits = memory_limit_mib <= 0 ? "-" : (total <= memory_limit_mib ? "yes" : "no");
      char step[32] = "-";
      if (step_ms >= 0) std::snprintf(step, sizeof step, "%.3f", step_ms);
      std::snprintf(buf, sizeof buf, "  %6d %-10s %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %9.0f%% %9s %s\n", n,
                    std::string(ddp::zero::shard_mode_name(mode)).c_str(), static_cast<double>(m.parameters) * mib,
                    static_cast<double>(m.gradients + m.reduced_gradients) * mib,
                    static_cast<double>(m.optimizer_state) * mib, static_cast<double>(m.comm_buffers) * mib,
                    static_cast<double>(m.activations) * mib, total, 100.0 * total / ddp_total, step, fits);
      o << buf;
    }
  }
  return o.str();
}

}  // namespace microddp::app
