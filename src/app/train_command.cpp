// train_command.cpp — `microddp train`: data-parallel training on all ranks of the job.
// Rank 0 prints a header (configuration, ranks, backend, threads), a progress line per logged
// step and a summary; --metrics writes the JSONL record.
#include <algorithm>
#include <memory>
#include <cinttypes>
#include <cstdio>
#include <thread>
#include <vector>

#include "app/command.hpp"
#include "app/train_options.hpp"
#include "comm/factory.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "perf/metrics_jsonl.hpp"
#include "perf/step_stats.hpp"

namespace microddp::app {

int default_blas_threads(const comm::MpiRuntime& mpi) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, mpi.local_size()));
}

namespace {

class TrainCommand final : public Command {
 public:
  explicit TrainCommand(CLI::App* sub) { add_train_options(sub, opts_, true); }
  void validate() override { validate_train_options(opts_); }
  int run(const comm::MpiRuntime& mpi) override;

 private:
  TrainOptions opts_;
};

int TrainCommand::run(const comm::MpiRuntime& mpi) {
  const auto& cfg = opts_.config;
  const int threads = opts_.threads > 0 ? opts_.threads : default_blas_threads(mpi);
  auto ops = kernels::make_cpu_ops(threads);
  auto comm = comm::make_communicator(opts_.comm, mpi);
  ddp::Trainer trainer(cfg, *comm, *ops);
  std::unique_ptr<perf::MetricsWriter> metrics;
  if (mpi.rank() == 0 && !opts_.metrics_path.empty()) metrics = std::make_unique<perf::MetricsWriter>(opts_.metrics_path);
  trainer.setup();

  const bool root = mpi.rank() == 0;
  if (root) {
    std::printf("# microddp train\n");
    std::printf("#   model      : FullMLP in=%" PRId64 " width=%" PRId64 " depth=%" PRId64 " classes=%" PRId64
                " (%" PRId64 " parameters, %.2f MiB)\n",
                cfg.model.in_dim, cfg.model.width, cfg.model.depth, cfg.model.classes, trainer.model().param_count(),
                static_cast<double>(trainer.model().param_count()) * 4.0 / (1 << 20));
    std::printf("#   data       : synthetic teacher set, seed %" PRIu64 ", global batch %" PRId64 " (%" PRId64
                " to %" PRId64 " rows per rank)\n",
                cfg.seed, cfg.global_batch, cfg.global_batch / mpi.size(),
                (cfg.global_batch + mpi.size() - 1) / mpi.size());
    std::printf("#   optimizer  : %s lr=%g weight_decay=%g\n", cfg.optimizer.name.c_str(),
                static_cast<double>(cfg.optimizer.lr), static_cast<double>(cfg.optimizer.weight_decay));
    std::printf("#   ranks      : %d (%d on this node), %s\n", mpi.size(), mpi.local_size(), mpi.library_version().c_str());
    std::printf("#   strategy   : %s over %s backend; %" PRId64 " collectives, %.2f MiB per step\n",
                cfg.strategy.c_str(), opts_.comm.c_str(), trainer.sync().collectives_per_step(),
                static_cast<double>(trainer.sync().bytes_per_step()) / (1 << 20));
    std::printf("#   compute    : %s\n", ops->description().c_str());
    std::printf("# %8s %12s %10s %12s %10s %9s\n", "step", "loss", "step_ms", "samples/s", "comm_ms", "eta_s");
    std::fflush(stdout);
  }

  std::vector<perf::StepStats> all_stats;
  all_stats.reserve(static_cast<std::size_t>(cfg.steps));
  double first_loss = 0.0, last_loss = 0.0;
  core::Stopwatch wall;
  for (std::int64_t s = 0; s < cfg.steps; ++s) {
    const ddp::StepRecord rec = trainer.step();
    const perf::StepStats st = perf::step_stats(trainer.events().events(), rec.step);
    all_stats.push_back(st);
    if (s == 0) first_loss = rec.loss;
    last_loss = rec.loss;
    if (metrics) metrics->write_step(st, rec.loss);
    if (root && ((s + 1) % opts_.log_every == 0 || s == 0 || s + 1 == cfg.steps)) {
      const double elapsed = wall.elapsed_s();
      const double eta = elapsed / static_cast<double>(s + 1) * static_cast<double>(cfg.steps - s - 1);
      std::printf("  %8" PRId64 " %12.6f %10.3f %12.0f %10.3f %9.1f\n", rec.step + 1, rec.loss, st.step_ms,
                  static_cast<double>(cfg.global_batch) / (st.step_ms * 1e-3), st.comm_total_ms, eta);
      std::fflush(stdout);
    }
  }
  const double total_s = wall.elapsed_s();
  // Steady state: skip the first step (cold caches, lazy library set-up) when there are more.
  std::vector<perf::StepStats> steady(all_stats.begin() + (all_stats.size() > 1 ? 1 : 0), all_stats.end());
  const perf::RunSummary sum = perf::summarize(steady);
  const std::uint64_t checksum = trainer.param_checksum();
  if (root) {
    const auto& m = sum.median;
    std::printf("# summary: %" PRId64 " steps in %.2f s; loss %.6f -> %.6f\n", cfg.steps, total_s, first_loss, last_loss);
    std::printf("#   median step %.3f ms (%.0f samples/s): data %.3f, forward %.3f, backward %.3f, comm %.3f "
                "(exposed %.3f), optimizer %.3f, loss sync %.3f ms\n",
                m.step_ms, static_cast<double>(cfg.global_batch) / (m.step_ms * 1e-3), m.data_ms, m.forward_ms,
                m.backward_ms, m.comm_total_ms, m.comm_exposed_ms, m.optimizer_ms, m.loss_sync_ms);
    std::printf("#   communication overhead %.1f%% of the step; parameter checksum %016" PRIx64 "\n",
                m.step_ms > 0 ? 100.0 * m.comm_exposed_ms / m.step_ms : 0.0, checksum);
    std::fflush(stdout);
  }
  if (metrics) {
    nlohmann::json j;
    j["type"] = "summary";
    j["config"] = {{"in_dim", cfg.model.in_dim}, {"width", cfg.model.width},     {"depth", cfg.model.depth},
                   {"classes", cfg.model.classes}, {"global_batch", cfg.global_batch}, {"steps", cfg.steps},
                   {"seed", cfg.seed},            {"optimizer", cfg.optimizer.name}, {"lr", cfg.optimizer.lr},
                   {"strategy", cfg.strategy},    {"comm", opts_.comm},             {"ranks", mpi.size()},
                   {"threads", threads}};
    j["first_loss"] = first_loss;
    j["final_loss"] = last_loss;
    j["total_s"] = total_s;
    j["param_checksum"] = checksum;
    j["median"] = perf::to_json(sum.median);
    j["mean"] = perf::to_json(sum.mean);
    metrics->write(j);
  }
  return 0;
}

}  // namespace

std::unique_ptr<Command> register_train(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("train", "Train the MLP data-parallel on all ranks (mpirun -np N microddp train)");
  return std::make_unique<TrainCommand>(sub);
}

}  // namespace microddp::app
