// manual_command.cpp — `microddp manual`: course warm-up 2. Two model replicas in ONE process,
// each on its half of the global batch; after backward their gradients are combined by hand and
// both take the same optimizer step. Because each replica's loss is already divided by the GLOBAL
// batch size, the combined gradient is the plain sum g_A + g_B (that sum *is* the average of the
// replicas' per-sample mean gradients, weighted by their shares — exact even for odd batches).
// The run checks after every step that the replicas hold bitwise identical parameters: this is
// what data parallelism must preserve, before any network is involved.
//
// --no-sync skips the combination: each replica steps on its own half-batch gradient, the way DDP
// would if the all-reduce were left out. Nothing then holds the replicas together; every logged
// step prints the largest parameter difference and both checksums, so the drift is visible.
//
// The summed gradient g_A + g_B is exactly what `train -np 2` all-reduces (a sum of two floats is
// the same in either order), so the final checksum matches `train -np 2` bit for bit; `baseline`
// sums all B rows inside one GEMM, a different summation order, so its checksum differs in the
// last bits (docs/baseline.md).
//
// --average NAME picks the combiner from the table in manual_replicas.hpp: ours, or a registered one
// (`lab`: lab 01's function, docs/labs/01-manual-averaging; done right, the run ends with exactly
// the checksum of the default `--average ours`).
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "app/command.hpp"
#include "app/manual_replicas.hpp"
#include "app/model_memory.hpp"
#include "app/train_options.hpp"
#include "core/error.hpp"

namespace microddp::app {

namespace {

constexpr int kReplicas = 2;

// Largest |a[i] - b[i]| over n elements (the replicas' drift).
double max_abs_diff(const float* a, const float* b, std::int64_t n) {
  double d = 0.0;
  for (std::int64_t i = 0; i < n; ++i) d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
  return d;
}

class ManualCommand final : public Command {
 public:
  explicit ManualCommand(CLI::App* sub) {
    // One process, no communication, no accumulation: the model, its optimizer and the run length.
    add_run_length_options(sub, opts_);
    add_model_options(sub, opts_);
    add_optimizer_options(sub, opts_);
    add_threads_option(sub, opts_);
    add_log_every_option(sub, opts_);
    auto* no_sync =
        sub->add_flag("--no-sync", no_sync_,
                      "Skip combining the gradients: each replica steps on its own half; watch them drift apart");
    // The rows of the combiner table: "ours, or lab (YOUR function of lab 01, ...)".
    std::string who;
    std::vector<std::string> names;
    for (const ReplicaCombinerRow& row : replica_combiners()) {
      who += std::string(who.empty() ? "" : ", or ") + std::string(row.name) +
             (row.help.empty() ? "" : " (" + std::string(row.help) + ")");
      names.emplace_back(row.name);
    }
    sub->add_option("--average", average_, "Who combines the replicas' gradients: " + who)
        ->check(CLI::IsMember(names))
        ->type_name("WHO")
        ->default_str("ours")
        ->excludes(no_sync);
  }
  void validate() override {
    validate_train_options(opts_);
    MDDP_USAGE_CHECK(opts_.config.global_batch >= kReplicas,
                     "--global-batch must be at least " << kReplicas << " (one row per replica)");
  }
  int run(const comm::MpiRuntime& mpi) override {
    MDDP_AGREED_USAGE_CHECK(mpi.size() == 1, "manual runs its replicas inside one process; start it without mpirun");
    const auto& cfg = opts_.config;
    const ReplicaCombinerRow& who = *find_replica_combiner(average_);  // --average checked it
    ReplicaCombiner combine = no_sync_ ? nullptr : who.combine;
    const std::string how =
        no_sync_ ? "--no-sync: gradients NOT combined, each replica steps on its own half" : std::string(who.summary);
    require_model_memory(cfg, kReplicas, kReplicas);  // before the replicas allocate (app/model_memory.hpp)
    ManualReplicas reps(cfg, kReplicas, blas_threads(opts_.threads, mpi, comm_settings()).threads);
    const std::int64_t n = reps.param_count();
    std::printf("# microddp manual: %d replicas in one process, rows per replica %" PRId64 " + %" PRId64 "; %s\n",
                kReplicas, reps.sampler(0).local_count(), reps.sampler(1).local_count(), how.c_str());
    // max|A-B|: largest parameter difference between the replicas; checksums: FNV-1a of each
    // replica's parameter bytes (equal exactly when the replicas are bitwise identical).
    std::printf("# %8s %12s %12s %12s %10s %12s %16s %16s\n", "step", "loss", "loss_A", "loss_B", "identical",
                "max|A-B|", "checksum_A", "checksum_B");
    const std::string_view why_diverged = who.diverged;
    bool same = true;
    for (std::int64_t s = 0; s < cfg.steps; ++s) {
      double losses[kReplicas];
      reps.step(s, combine, losses);
      const float* pa = reps.replica(0).param_data();
      const float* pb = reps.replica(1).param_data();
      same = std::memcmp(pa, pb, static_cast<std::size_t>(n) * sizeof(float)) == 0;
      MDDP_CHECK(same || no_sync_, "replicas diverged at step " << s + 1 << why_diverged);
      if ((s + 1) % opts_.log_every == 0 || s == 0 || s + 1 == cfg.steps) {
        std::printf("  %8" PRId64 " %12.6f %12.6f %12.6f %10s %12.4e %016" PRIx64 " %016" PRIx64 "\n", s + 1,
                    losses[0] + losses[1], losses[0], losses[1], same ? "yes" : "NO", max_abs_diff(pa, pb, n),
                    reps.checksum(0), reps.checksum(1));
      }
    }
    if (same) {
      std::printf("# summary: replicas identical after %" PRId64 " steps; parameter checksum %016" PRIx64 "\n",
                  cfg.steps, reps.checksum(0));
    } else {
      std::printf("# summary: replicas DIFFER after %" PRId64 " steps (--no-sync): max|A-B| %.4e; checksums %016" PRIx64
                  " %016" PRIx64 "\n",
                  cfg.steps, max_abs_diff(reps.replica(0).param_data(), reps.replica(1).param_data(), n),
                  reps.checksum(0), reps.checksum(1));
    }
    return 0;
  }

 private:
  TrainOptions opts_;
  bool no_sync_ = false;
  std::string average_ = "ours";
};

}  // namespace

std::unique_ptr<Command> register_manual(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("manual", "Course warm-up 2: two replicas in one process, gradients combined by hand");
  return std::make_unique<ManualCommand>(sub);
}

}  // namespace microddp::app
