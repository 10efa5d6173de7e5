// console_table.cpp — the header, the step table and the validation lines, as printf formats.
#include "run/console_table.hpp"

#include <cinttypes>
#include <cstdio>
#include <utility>

#include "run/count_text.hpp"

namespace microddp::run {

std::string overlap_text(bool single_rank, double fraction) {
  char text[16] = "n/a";
  if (!single_rank) std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return std::string(text);
}

namespace {

// "#   compression: ..." when the gradients travel compressed; nothing otherwise.
void print_compression(const ddp::GradCompressionConfig& cc) {
  if (cc.mode == ddp::CompressionMode::None) return;
  char how[160] = "";
  if (ddp::compression_mode_row(cc.mode).powersgd_settings) {
    std::snprintf(how, sizeof how, " rank %" PRId64 " from step %" PRId64 ",", cc.powersgd_rank,
                  cc.powersgd_start_step + 1);
  }
  std::printf("#   compression: %s%s error feedback %s (docs/compression.md)\n",
              std::string(ddp::compression_mode_name(cc.mode)).c_str(), how, cc.error_feedback ? "on" : "off");
}

}  // namespace

ConsoleTable::ConsoleTable(const RunFacts& facts, std::string best_note)
    : f_(facts), best_note_(std::move(best_note)) {}

void ConsoleTable::on_start() {
  if (!f_.root()) return;
  std::printf("# microddp train\n");
  print_model_and_data();
  print_training();
  print_compute();
  // busy_ms: union of the collectives' execution intervals; overlap = 1 - exposed / busy (comm_busy.hpp).
  // The epoch column only when the data has epochs: a run without --data prints what it always did.
  // The lr column only with a schedule: a constant-lr run prints what it always did.
  std::printf("# %8s %12s %10s %12s %10s %10s %10s %8s %9s%s%s\n", "step", "loss", "step_ms", "samples/s", "busy_ms",
              "queued_ms", "exposed_ms", "overlap", "eta_s", f_.data != nullptr ? "    epoch" : "",
              f_.trainer.lr_schedule().is_constant() ? "" : "          lr");
  std::fflush(stdout);
}

void ConsoleTable::print_model_and_data() const {
  const ddp::TrainConfig& cfg = f_.config;
  const int ranks = f_.mpi.size();
  std::printf("#   model      : FullMLP in=%" PRId64 " width=%" PRId64 " depth=%" PRId64 " classes=%" PRId64
              " (%" PRId64 " parameters, %.2f MiB)\n",
              cfg.model.in_dim, cfg.model.width, cfg.model.depth, cfg.model.classes,
              f_.trainer.model().parameter_count(),
              static_cast<double>(f_.trainer.model().parameter_count() * model::kParamElementBytes) / (1 << 20));
  const std::string data_text =
      f_.data != nullptr ? f_.control.data_summary() : "synthetic teacher set, seed " + std::to_string(cfg.seed);
  std::printf("#   data       : %s; global batch %" PRId64 " (%" PRId64 " to %" PRId64 " rows per rank)\n",
              data_text.c_str(), cfg.global_batch, cfg.global_batch / ranks, (cfg.global_batch + ranks - 1) / ranks);
  if (f_.data != nullptr) {
    std::printf("#   epochs     : %s\n", f_.data->train_line().c_str());
    std::printf("#   validation : %s\n", f_.data->val_line().c_str());
  }
}

void ConsoleTable::print_training() const {
  const ddp::TrainConfig& cfg = f_.config;
  const ddp::GradSync& sync = f_.trainer.sync();
  std::printf("#   optimizer  : %s lr=%g weight_decay=%g\n", cfg.optimizer.name.c_str(),
              static_cast<double>(cfg.optimizer.lr), static_cast<double>(cfg.optimizer.weight_decay));
  const model::LrSchedule& schedule = f_.trainer.lr_schedule();
  if (!schedule.is_constant()) std::printf("#   lr schedule: %s\n", schedule.describe().c_str());
  if (f_.best.active()) {
    std::printf("#   best model : %s%s\n", f_.best.describe(f_.control.checkpoint_dir()).c_str(),
                best_note_.empty() ? "" : (" (" + best_note_ + ")").c_str());
  }
  std::printf("#   ranks      : %d (%d on this node), %s\n", f_.mpi.size(), f_.mpi.local_size(),
              f_.mpi.library_version().c_str());
  std::printf("#   strategy   : %s over %s backend; %s, %.2f MiB per step\n", std::string(sync.name()).c_str(),
              f_.env.backend.c_str(), count_text(sync.collectives_per_step(), "collective").c_str(),
              static_cast<double>(sync.bytes_per_step()) / (1 << 20));
  // Bytes per rank from the allocations (rank 0's; every rank's shard has the same size).
  std::printf("#   memory     : --shard %s: %s per rank\n", std::string(ddp::zero::shard_mode_name(cfg.shard)).c_str(),
              ddp::zero::format_memory(f_.trainer.memory_report()).c_str());
  print_compression(cfg.compression);
  if (cfg.accum_steps > 1) {
    std::printf("#   accumulate : %" PRId64 " micro-batches of %" PRId64 " per step (effective batch %" PRId64
                "), gradients synchronised on the last only\n",
                cfg.accum_steps, cfg.global_batch, cfg.accum_steps * cfg.global_batch);
  }
}

void ConsoleTable::print_compute() const {
  const ddp::TrainConfig& cfg = f_.config;
  const bool host = f_.ops.device() == core::Device::Host;
  std::printf("#   compute    : %s\n", f_.ops.description().c_str());
  if (cfg.precision == core::Precision::Bf16) {
    std::printf("#   precision  : bf16 GEMM operands (%s), fp32 sums, master weights, optimizer and loss\n",
                host ? "the CPU reference: operands rounded, sgemm" : "tensor cores, cublasGemmEx");
  } else {
    std::printf("#   precision  : %s\n", std::string(core::precision_name(cfg.precision)).c_str());
  }
  if (cfg.simulate_compute_ms > 0.0f) {
    std::printf("#   simulated  : backward waits %g ms per pass (shared among the layers by parameter count, "
                "sleeping: the core is free for communication; --simulate-compute-ms)\n",
                static_cast<double>(cfg.simulate_compute_ms));
  }
  if (!host) std::printf("#   cuda graph : %s\n", f_.trainer.step_graph().describe().c_str());
  if (host) std::printf("#   threads    : %s\n", f_.env.threads_text.c_str());
  if (!f_.env.device_note.empty()) std::printf("#   gpu shared : %s\n", f_.env.device_note.c_str());
  char clip[64] = "off";
  if (cfg.clip_grad_norm > 0.0f) std::snprintf(clip, sizeof clip, "to norm %g", static_cast<double>(cfg.clip_grad_norm));
  char every[64] = "at the end only";
  if (cfg.check_every > 0) std::snprintf(every, sizeof every, "every %" PRId64 " steps and at the end", cfg.check_every);
  std::printf("#   checks     : divergence %s; on NaN/Inf: %s; grad clipping %s\n", every,
              std::string(ddp::nan_policy_name(cfg.on_nan)).c_str(), clip);
}

void ConsoleTable::on_step(const StepReport& step) {
  const std::int64_t s = step.index, steps = f_.config.steps;
  if (!f_.root() || !((s + 1) % f_.log_every == 0 || s == f_.start || s + 1 == steps)) return;
  const double eta = step.elapsed_s / static_cast<double>(s + 1 - f_.start) * static_cast<double>(steps - s - 1);
  char epoch_text[24] = "", lr_text[24] = "";
  if (f_.data != nullptr) std::snprintf(epoch_text, sizeof epoch_text, " %8" PRId64, step.epoch);
  if (!f_.trainer.lr_schedule().is_constant()) {
    std::snprintf(lr_text, sizeof lr_text, " %11.4e", static_cast<double>(step.record.lr));
  }
  const perf::StepStats& st = step.stats;
  std::printf("  %8" PRId64 " %12.6f %10.3f %12.0f %10.3f %10.3f %10.3f %8s %9.1f%s%s\n", step.record.step + 1,
              step.record.loss, st.step_ms, step.samples_per_s, st.comm_busy_ms, st.comm_queued_ms, st.comm_exposed_ms,
              overlap_text(f_.mpi.size() == 1, st.overlap()).c_str(), eta, epoch_text, lr_text);
  std::fflush(stdout);
}

void ConsoleTable::on_validation(const ValidationReport& v) {
  if (!f_.root()) return;
  std::printf("# validation: step %" PRId64 " epoch %" PRId64 ": loss %.6f accuracy %.4f (%" PRId64 " of %" PRId64
              " rows)\n",
              v.step, v.epoch, v.counts.mean_loss(), v.counts.accuracy(), v.counts.correct, v.counts.rows);
  std::fflush(stdout);
}

void ConsoleTable::on_early_stop(std::int64_t step, const std::string& reason) {
  if (!f_.root()) return;
  std::printf("# early stop after step %" PRId64 ": %s; best %s\n", step, reason.c_str(), f_.best.best_text().c_str());
  std::fflush(stdout);
}

}  // namespace microddp::run
