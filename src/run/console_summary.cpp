// console_summary.cpp — the summary block, as printf formats.
#include "run/console_summary.hpp"

#include <cinttypes>
#include <cstdio>
#include <string>

#include "io/checkpoint_dir.hpp"
#include "run/console_table.hpp"
#include "run/count_text.hpp"

namespace microddp::run {

void ConsoleSummary::on_end(comm::Communicator& comm, const RunOutcome& outcome) {
  if (!f_.root()) return;
  print_steps(outcome);
  print_communication(outcome);
  print_results(outcome);
  print_checks(comm, outcome);
  std::fflush(stdout);
}

void ConsoleSummary::print_steps(const RunOutcome& o) const {
  const ddp::TrainConfig& cfg = f_.config;
  const perf::StepStats& m = o.summary.median;
  // The steps this run did: from `start` (a resumed checkpoint's step) to `end` (cfg.steps, or
  // earlier when a signal stopped it).
  std::string where;
  if (f_.start > 0) where = "resumed at step " + std::to_string(f_.start);
  if (o.end < cfg.steps) {
    where += (where.empty() ? "" : "; ") + std::string(o.stop_reason.empty() ? "stopped" : "stopped early") +
             " at step " + std::to_string(o.end) + " of " + std::to_string(cfg.steps);
  } else if (f_.start > 0) {
    where += "; now at step " + std::to_string(o.end) + " of " + std::to_string(cfg.steps);
  }
  std::printf("# summary: %s in %.2f s%s; loss %.6f -> %.6f\n", count_text(o.steps_run, "step").c_str(), o.total_s,
              where.empty() ? "" : (" (" + where + ")").c_str(), o.first_loss, o.last_loss);
  std::printf(
      "#   median step %.3f ms (%.0f samples/s): data %.3f, forward %.3f, backward %.3f, comm busy %.3f "
      "(exposed %.3f; queued %.3f), optimizer %.3f, loss sync %.3f ms\n",
      m.step_ms, static_cast<double>(cfg.global_batch * cfg.accum_steps) / (m.step_ms * 1e-3), m.data_ms, m.forward_ms,
      m.backward_ms, m.comm_busy_ms, m.comm_exposed_ms, m.comm_queued_ms, m.optimizer_ms, m.loss_sync_ms);
  // Exposed: the Data event (the step waited for its input); background: the loader's fill time,
  // per step (accum_steps batches), over the batches it filled.
  std::printf("#   data: exposed %.3f ms/step, prepared in the background %.3f ms/step (%s)\n", m.data_ms,
              o.background_ms_per_step, f_.trainer.input_note().c_str());
}

void ConsoleSummary::print_communication(const RunOutcome& o) const {
  const ddp::TrainConfig& cfg = f_.config;
  const ddp::GradSync& sync = f_.trainer.sync();
  const perf::StepStats& m = o.summary.median;
  const bool single = f_.mpi.size() == 1;
  if (f_.trainer.step_graph().replays() > 0) {
    // A replay runs the collectives without the host: they have no events to count or time.
    std::printf("#   communication: %s, %.2f MiB per step, inside the CUDA graph (not timed "
                "there; --cuda-graph off times each one)\n",
                count_text(sync.collectives_per_step(), "collective").c_str(),
                static_cast<double>(sync.bytes_per_step()) / (1 << 20));
  } else {
    std::printf(
        "#   communication: %s, %.2f MiB per step; overlap %s; overhead %.1f%% of the step\n",
        count_text(m.collectives, "collective").c_str(), static_cast<double>(m.comm_bytes) / (1 << 20),
        single ? "n/a (1 rank: nothing to communicate)" : (overlap_text(single, m.overlap()) + " (1 - exposed/busy)").c_str(),
        m.step_ms > 0 ? 100.0 * m.comm_exposed_ms / m.step_ms : 0.0);
  }
  std::printf("#   memory per rank (--shard %s, measured): %s\n",
              std::string(ddp::zero::shard_mode_name(cfg.shard)).c_str(),
              ddp::zero::format_memory(f_.trainer.memory_report()).c_str());
  if (cfg.compression.mode != ddp::CompressionMode::None) {
    const double fp32 = static_cast<double>(sync.uncompressed_bytes_per_step());
    std::printf(
        "#   compression: %s, %.3f MiB on the wire per step (%.1f%% of fp32's %.3f MiB); encode/decode %.3f ms "
        "per step (median)\n",
        std::string(ddp::compression_mode_name(cfg.compression.mode)).c_str(),
        static_cast<double>(m.comm_bytes) / (1 << 20),
        fp32 > 0 ? 100.0 * static_cast<double>(m.comm_bytes) / fp32 : 0.0, fp32 / (1 << 20), m.compress_ms);
  }
}

void ConsoleSummary::print_results(const RunOutcome& o) const {
  std::printf("#   parameter checksum %016" PRIx64 "\n", o.checksum);
  if (o.last_val.rows > 0) {
    std::printf("#   validation after step %" PRId64 ": loss %.6f accuracy %.4f (%" PRId64 " of %" PRId64 " rows)\n",
                o.last_val_step, o.last_val.mean_loss(), o.last_val.accuracy(), o.last_val.correct, o.last_val.rows);
  }
  if (f_.best.have_best()) {
    std::printf("#   best: %s%s\n", f_.best.best_text().c_str(),
                f_.best.saves_best() ? (", " + io::best_checkpoint_path(f_.control.checkpoint_dir())).c_str() : "");
  }
}

void ConsoleSummary::print_checks(const comm::Communicator& comm, const RunOutcome& o) const {
  const ddp::Trainer& trainer = f_.trainer;
  const perf::StepStats& m = o.summary.median;
  const double check_ms =
      trainer.checks_done() > 0 ? trainer.check_ms_total() / static_cast<double>(trainer.checks_done()) : 0.0;
  std::printf("#   checks: %s passed (mean %.3f ms each, %.1f%% of the median step); %s skipped for non-finite "
              "loss/gradient\n",
              count_text(trainer.checks_done(), "divergence check").c_str(), check_ms,
              m.step_ms > 0 ? 100.0 * check_ms / m.step_ms : 0.0, count_text(trainer.skipped_steps(), "step").c_str());
  const comm::Communicator::SyncCheckStats sc = comm.sync_check_stats();
  if (sc.checks == 0) return;
  std::printf("#   desync: %s passed (start-up", count_text(sc.checks, "sync check").c_str());
  if (f_.config.sync_check_every > 0) std::printf(", every %" PRId64 " steps", f_.config.sync_check_every);
  std::printf(")");
  if (sc.timed > 0) {
    std::printf(
        "; one took min %.3f ms, mean %.3f ms incl. waiting for the slowest rank (%.2f%% / %.2f%% of the "
        "median step)",
        sc.min_ms, sc.mean_ms, m.step_ms > 0 ? 100.0 * sc.min_ms / m.step_ms : 0.0,
        m.step_ms > 0 ? 100.0 * sc.mean_ms / m.step_ms : 0.0);
  }
  std::printf("%s\n", debug_sync_ ? "; --debug-sync: every collective compared before it ran" : "");
}

}  // namespace microddp::run
