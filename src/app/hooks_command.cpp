// hooks_command.cpp — `microddp hooks`: the gradient hooks made visible.
//
// Trains a few steps and prints, per step on rank 0, every grad_ready event (the backward pass
// reports gradients in REVERSE layer order: output layer first) and each gradient collective's
// launch, start of execution and completion, in time order, in milliseconds from the start of backward. With
// `overlap` or `bucketed`, collectives launch and often complete while backward still runs; with
// `naive` or `flat` they all come after backward ends. Everything printed is read from the event
// log (the same events as the step statistics and the trace).
// --device cpu|cuda|auto (default cpu) and --precision as `train`'s: on a GPU the steps run eagerly
// (a CUDA graph would hide the collectives' events); grad_ready and launch are then the host's times
// of queueing, while backward's begin/end, start and complete are the GPU's (CUDA events on the host
// clock), and the header says so.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "app/cli_values.hpp"
#include "app/command.hpp"
#include "app/compute_device.hpp"
#include "app/parameter_agreement.hpp"
#include "app/train_options.hpp"
#include "app/training_session.hpp"
#include "core/precision.hpp"
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
    add_compute_options(sub, compute_, "the model");
    comm_option_ = sub->get_option("--comm");
  }
  void validate() override {
    validate_device_name(compute_.device);
    opts_.config.precision = compute_.resolved_precision();
    validate_train_options(opts_);
  }
  double comm_timeout_s() const override { return opts_.comm_timeout_s; }
  int run(const comm::MpiRuntime& mpi) override;

 private:
  TrainOptions opts_;
  ComputeOptions compute_;  // --device (cpu unless asked), --precision, --tf32
  CLI::Option* comm_option_ = nullptr;  // a GPU model without --comm gets nccl (compute_device.hpp)
};

struct Row {
  std::int64_t t_ns;
  int order;  // ties: begin before instants before ends
  std::string what, detail;
};

int HooksCommand::run(const comm::MpiRuntime& mpi) {
  // The device as train picks it (compute_device.hpp); eager steps, so every collective is an event.
  TrainingSession session(mpi, opts_, comm_settings(),
                          DeviceRequest{compute_.device, comm_option_->count() > 0,
                                        opts_.config.precision == core::Precision::Tf32});
  opts_.comm = session.backend();
  opts_.config.cuda_graph = ddp::CudaGraphMode::Off;
  const auto& cfg = opts_.config;
  const bool on_gpu = session.ops().device() == core::Device::Cuda;
  ddp::Trainer& trainer = session.start_trainer(cfg);
  trainer.setup();
  const bool root = mpi.rank() == 0;
  const auto& params = trainer.model().params();
  if (root) {
    std::printf("# microddp hooks: strategy %s over %s, %d ranks, device %s; model width %" PRId64 " depth %" PRId64
                " (%zu parameters in gradient-ready order, %" PRId64 " collectives per step)\n",
                std::string(trainer.sync().name()).c_str(), opts_.comm.c_str(), mpi.size(), on_gpu ? "cuda" : "cpu",
                cfg.model.width,
                cfg.model.depth, params.size(), trainer.sync().collectives_per_step());
    std::printf("# compute: %s; precision %s\n", session.ops().description().c_str(),
                std::string(core::precision_name(cfg.precision)).c_str());
    if (!session.device_note().empty()) std::printf("# gpu shared: %s\n", session.device_note().c_str());
    std::printf("# times in ms from the start of the (last micro-step's) backward pass, rank 0's events\n");
    if (on_gpu) {
      std::printf("# on the GPU: grad_ready and launch are when the host queued them; backward begins/ends, start "
                  "and complete are the GPU's times (CUDA events); steps run eagerly (no CUDA graph)\n");
    }
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
  // The hooks only show what ran; this says the collectives did their job (bench ddp's #wrong).
  const int wrong = ranks_disagreeing_with_rank0(trainer, session.comm());
  if (root) {
    if (wrong == 0) {
      std::printf("\n# OK: all %d ranks hold identical parameters after %" PRId64 " steps\n", mpi.size(), cfg.steps);
    } else {
      std::printf("\n# FAILED: %d of %d ranks hold parameters other than rank 0's\n", wrong, mpi.size());
    }
  }
  return wrong == 0 ? 0 : 1;
}

}  // namespace

std::unique_ptr<Command> register_hooks(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("hooks",
                              "Print each step's grad_ready events and collective launches/completions in time order");
  return std::make_unique<HooksCommand>(sub);
}

}  // namespace microddp::app
