// hooks_command.cpp — `microddp hooks`: the gradient hooks made visible.
//
// Trains a few steps and prints, per step on rank 0, every grad_ready event (the backward pass
// reports gradients in REVERSE layer order: output layer first) and each gradient collective's
// launch, start of execution and completion, in time order, in milliseconds from the start of backward. With
// `overlap` or `bucketed`, collectives launch and often complete while backward still runs; with
// `naive` or `flat` they all come after backward ends. Everything printed is read from the event
// log (the same events as the step statistics and the trace).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "app/command.hpp"
#include "app/train_options.hpp"
#include "app/training_session.hpp"
#include "ddp/trainer.hpp"
#include "perf/step_stats.hpp"

namespace microddp::app {

namespace {

class HooksCommand final : public Command {
 public:
  explicit HooksCommand(CLI::App* sub) {
    // A small model that runs in milliseconds; every train option can still be given.
    opts_.config.steps = 2;
    opts_.config.model.width = 512;
    opts_.config.model.depth = 3;
    opts_.config.global_batch = 128;
    opts_.config.strategy = ddp::Strategy::Bucketed;
    opts_.config.sync_options.bucket_mb = 1.0;
    add_distributed_training_options(sub, opts_);
    add_strategy_option(sub, opts_);
    add_bucket_options(sub, opts_, /*with_cap=*/true);
  }
  void validate() override { validate_train_options(opts_); }
  double comm_timeout_s() const override { return opts_.comm_timeout_s; }
  int run(const comm::MpiRuntime& mpi) override;

 private:
  TrainOptions opts_;
};

struct Row {
  std::int64_t t_ns;
  int order;  // ties: begin before instants before ends
  std::string what, detail;
};

int HooksCommand::run(const comm::MpiRuntime& mpi) {
  const auto& cfg = opts_.config;
  TrainingSession session(mpi, opts_, comm_settings());
  ddp::Trainer& trainer = session.start_trainer(cfg);
  trainer.setup();
  const bool root = mpi.rank() == 0;
  const auto& params = trainer.model().params();
  if (root) {
    std::printf("# microddp hooks: strategy %s over %s, %d ranks; model width %" PRId64 " depth %" PRId64
                " (%zu parameters in gradient-ready order, %" PRId64 " collectives per step)\n",
                std::string(trainer.sync().name()).c_str(), opts_.comm.c_str(), mpi.size(), cfg.model.width,
                cfg.model.depth, params.size(), trainer.sync().collectives_per_step());
    std::printf("# times in ms from the start of the (last micro-step's) backward pass, rank 0's events\n");
  }
  for (std::int64_t s = 0; s < cfg.steps; ++s) {
    const auto rec = trainer.step();
    if (!root) continue;
    const auto& ev = trainer.events().events();
    std::int64_t bwd_begin = 0, bwd_end = 0;
    for (const auto& e : ev) {
      if (e.step == rec.step && e.kind == core::EventKind::Backward)
        std::tie(bwd_begin, bwd_end) = std::tie(e.begin_ns, e.end_ns);
    }
    std::vector<Row> rows;
    rows.push_back({bwd_begin, 0, "backward", "begins"});
    rows.push_back({bwd_end, 2, "backward", "ends"});
    int early = 0, colls = 0;
    for (const auto& e : ev) {
      if (e.step != rec.step) continue;
      if (e.kind == core::EventKind::GradReady) {
        rows.push_back({e.begin_ns, 1, "grad_ready",
                        params[static_cast<std::size_t>(e.id)].name + " (#" + std::to_string(e.id) + ")"});
      } else if (e.kind == core::EventKind::Collective) {
        const std::string label = trainer.sync().collective_label(e.id);
        char mib[48];
        std::snprintf(mib, sizeof mib, ", %.3f MiB", static_cast<double>(e.bytes) / (1 << 20));
        rows.push_back({e.begin_ns, 1, "launch", label + mib});
        rows.push_back({e.end_ns, 2, "complete",
                        label + " (" + std::to_string((e.end_ns - e.begin_ns) / 1000) + " us after launch)"});
        ++colls;
        early += e.begin_ns < bwd_end ? 1 : 0;
      } else if (e.kind == core::EventKind::CollectiveExec) {
        // Launch -> start is queueing behind earlier collectives; start -> complete is execution.
        rows.push_back({e.begin_ns, 1, "start", trainer.sync().collective_label(e.id) + " starts executing"});
      } else if (e.kind == core::EventKind::CommWait) {
        rows.push_back({e.begin_ns, 0, "finish", "waits for outstanding collectives"});
        rows.push_back(
            {e.end_ns, 2, "finish", "returns (blocked " + std::to_string((e.end_ns - e.begin_ns) / 1000) + " us)"});
      }
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row& a, const Row& b) { return a.t_ns != b.t_ns ? a.t_ns < b.t_ns : a.order < b.order; });
    const perf::StepStats st = perf::step_stats(ev, rec.step);
    std::printf("\n# step %" PRId64 ": loss %.6f\n# %9s  %-10s  %s\n", rec.step + 1, rec.loss, "t_ms", "event", "what");
    for (const Row& r : rows) {
      std::printf("  %9.3f  %-10s  %s\n", static_cast<double>(r.t_ns - bwd_begin) * 1e-6, r.what.c_str(),
                  r.detail.c_str());
    }
    std::printf(
        "# %d of %d collectives launched before backward ended; comm busy %.3f ms (queued %.3f ms), exposed %.3f ms, "
        "overlap %.1f%% (1 - exposed / busy)\n",
        early, colls, st.comm_busy_ms, st.comm_queued_ms, st.comm_exposed_ms, 100.0 * st.overlap());
  }
  return 0;
}

}  // namespace

std::unique_ptr<Command> register_hooks(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("hooks",
                              "Print each step's grad_ready events and collective launches/completions in time order");
  return std::make_unique<HooksCommand>(sub);
}

}  // namespace microddp::app
