// baseline_command.cpp — `microddp baseline`: course warm-up 1. One process, the whole global
// batch, no communication at all: the reference every data-parallel run must reproduce.
#include <cinttypes>
#include <cstdio>

#include "core/hash.hpp"
#include "app/command.hpp"
#include "app/model_memory.hpp"
#include "app/train_options.hpp"
#include "core/error.hpp"
#include "core/host_buffer.hpp"
#include "core/timer.hpp"
#include "data/synthetic_dataset.hpp"
#include "ddp/train_config.hpp"
#include "kernels/ops.hpp"
#include "model/mlp.hpp"
#include "model/optimizer.hpp"

namespace microddp::app {

namespace {

class BaselineCommand final : public Command {
 public:
  explicit BaselineCommand(CLI::App* sub) {
    // One process, no communication, no accumulation: the model, its optimizer and the run length.
    add_run_length_options(sub, opts_);
    add_model_options(sub, opts_);
    add_optimizer_options(sub, opts_);
    add_threads_option(sub, opts_);
    add_log_every_option(sub, opts_);
  }
  void validate() override { validate_train_options(opts_); }
  int run(const comm::MpiRuntime& mpi) override {
    MDDP_AGREED_USAGE_CHECK(mpi.size() == 1,
                            "baseline is a single-process run; start it without mpirun (or with -np 1)");
    const auto& cfg = opts_.config;
    require_model_memory(cfg, 1, 1);  // before the model allocates (app/model_memory.hpp)
    auto ops = kernels::make_cpu_ops(blas_threads(opts_.threads, mpi, comm_settings()).threads);
    data::SyntheticDataset dataset(cfg.seed, cfg.model.in_dim, cfg.model.classes);
    model::FullMLP model(cfg.model, cfg.global_batch, *ops);
    auto optimizer = model::make_optimizer(cfg.optimizer, model.flat_count(), *ops);
    core::HostBuffer<std::int32_t> labels(cfg.global_batch);
    model.init(cfg.seed);
    std::printf("# microddp baseline: one process, global batch %" PRId64 ", %" PRId64
                " parameters, no communication\n",
                cfg.global_batch, model.parameter_count());
    std::printf("# %8s %12s %10s\n", "step", "loss", "step_ms");
    core::Stopwatch wall;
    for (std::int64_t s = 0; s < cfg.steps; ++s) {
      core::Stopwatch sw;
      dataset.fill(s * cfg.global_batch, cfg.global_batch, model.input(), labels.data());
      model.zero_grad();
      model.forward(model.input(), cfg.global_batch);
      const double loss = model.backward(labels.data(), 1.0f / static_cast<float>(cfg.global_batch), nullptr);
      optimizer->step(model.param_data(), model.grad_data());
      if ((s + 1) % opts_.log_every == 0 || s == 0 || s + 1 == cfg.steps) {
        std::printf("  %8" PRId64 " %12.6f %10.3f\n", s + 1, loss, sw.elapsed_ms());
      }
    }
    const auto checksum =
        core::fnv1a64(model.param_data(), static_cast<std::size_t>(model.flat_count()) * sizeof(float));
    std::printf("# summary: %" PRId64 " steps in %.2f s; parameter checksum %016" PRIx64 "\n", cfg.steps,
                wall.elapsed_s(), checksum);
    return 0;
  }

 private:
  TrainOptions opts_;
};

}  // namespace

std::unique_ptr<Command> register_baseline(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("baseline", "Course warm-up 1: single-process training, no communication");
  return std::make_unique<BaselineCommand>(sub);
}

}  // namespace microddp::app
