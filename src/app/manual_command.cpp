// manual_command.cpp — `microddp manual`: course warm-up 2. Two model replicas in ONE process,
// each on its half of the global batch; after backward their gradients are combined by hand and
// both take the same optimizer step. Because each replica's loss is already divided by the GLOBAL
// batch size, the combined gradient is the plain sum g_A + g_B (that sum *is* the average of the
// replicas' per-sample mean gradients, weighted by their shares — exact even for odd batches).
// The run checks after every step that the replicas hold bitwise identical parameters: this is
// what data parallelism must preserve, before any network is involved.
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "core/hash.hpp"
#include "app/command.hpp"
#include "app/train_options.hpp"
#include "core/error.hpp"
#include "core/host_buffer.hpp"
#include "data/synthetic_dataset.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "model/mlp.hpp"
#include "model/optimizer.hpp"

namespace microddp::app {

namespace {

constexpr int kReplicas = 2;

class ManualCommand final : public Command {
 public:
  explicit ManualCommand(CLI::App* sub) {
    // One process, no communication, no accumulation: the model, its optimizer and the run length.
    add_run_length_options(sub, opts_);
    add_model_options(sub, opts_);
    add_optimizer_options(sub, opts_);
    add_threads_option(sub, opts_);
    add_log_every_option(sub, opts_);
  }
  void validate() override {
    validate_train_options(opts_);
    MDDP_USAGE_CHECK(opts_.config.global_batch >= kReplicas,
                     "--global-batch must be at least " << kReplicas << " (one row per replica)");
  }
  int run(const comm::MpiRuntime& mpi) override {
    MDDP_AGREED_USAGE_CHECK(mpi.size() == 1, "manual runs its replicas inside one process; start it without mpirun");
    const auto& cfg = opts_.config;
    auto ops = kernels::make_cpu_ops(opts_.threads > 0 ? opts_.threads : default_blas_threads(mpi));
    data::SyntheticDataset dataset(cfg.seed, cfg.model.in_dim, cfg.model.classes);
    const std::int64_t max_rows = data::Sampler::max_local_count(cfg.global_batch, kReplicas);
    std::vector<std::unique_ptr<model::FullMLP>> replicas;
    std::vector<std::unique_ptr<model::Optimizer>> optimizers;
    std::vector<data::Sampler> samplers;
    for (int r = 0; r < kReplicas; ++r) {
      replicas.push_back(std::make_unique<model::FullMLP>(cfg.model, max_rows, *ops));
      optimizers.push_back(model::make_optimizer(cfg.optimizer, replicas.back()->flat_count(), *ops));
      samplers.emplace_back(cfg.global_batch, r, kReplicas);
      replicas.back()->init(cfg.seed);
    }
    core::HostBuffer<std::int32_t> labels(max_rows);
    const std::int64_t n = replicas[0]->flat_count();
    std::printf("# microddp manual: %d replicas in one process, rows per replica %" PRId64 " + %" PRId64 "\n",
                kReplicas, samplers[0].local_count(), samplers[1].local_count());
    std::printf("# %8s %12s %12s %12s %10s\n", "step", "loss", "loss_A", "loss_B", "identical");
    for (std::int64_t s = 0; s < cfg.steps; ++s) {
      double losses[kReplicas];
      for (int r = 0; r < kReplicas; ++r) {
        auto& m = *replicas[static_cast<std::size_t>(r)];
        const auto& smp = samplers[static_cast<std::size_t>(r)];
        dataset.fill(smp.first_sample(s), smp.local_count(), m.input(), labels.data());
        m.zero_grad();
        m.forward(m.input(), smp.local_count());
        losses[r] = m.backward(labels.data(), 1.0f / static_cast<float>(cfg.global_batch), nullptr);
      }
      // The hand-written all-reduce: g = g_A + g_B, copied back to both replicas.
      float* ga = replicas[0]->grad_data();
      float* gb = replicas[1]->grad_data();
      for (std::int64_t i = 0; i < n; ++i) ga[i] = gb[i] = ga[i] + gb[i];
      for (int r = 0; r < kReplicas; ++r) {
        optimizers[static_cast<std::size_t>(r)]->step(replicas[static_cast<std::size_t>(r)]->param_data(),
                                                      replicas[static_cast<std::size_t>(r)]->grad_data());
      }
      const bool same = std::memcmp(replicas[0]->param_data(), replicas[1]->param_data(),
                                    static_cast<std::size_t>(n) * sizeof(float)) == 0;
      MDDP_CHECK(same, "replicas diverged at step " << s);
      if ((s + 1) % opts_.log_every == 0 || s == 0 || s + 1 == cfg.steps) {
        std::printf("  %8" PRId64 " %12.6f %12.6f %12.6f %10s\n", s + 1, losses[0] + losses[1], losses[0], losses[1],
                    same ? "yes" : "NO");
      }
    }
    const auto checksum = core::fnv1a64(replicas[0]->param_data(), static_cast<std::size_t>(n) * sizeof(float));
    std::printf("# summary: replicas identical after %" PRId64 " steps; parameter checksum %016" PRIx64 "\n", cfg.steps,
                checksum);
    return 0;
  }

 private:
  TrainOptions opts_;
};

}  // namespace

std::unique_ptr<Command> register_manual(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("manual", "Course warm-up 2: two replicas in one process, gradients combined by hand");
  return std::make_unique<ManualCommand>(sub);
}

}  // namespace microddp::app
