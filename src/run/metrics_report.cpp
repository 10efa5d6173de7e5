// metrics_report.cpp — the JSONL records of a run: steps, validations, the summary.
#include "run/metrics_report.hpp"

#include <chrono>
#include <thread>

#include "io/checkpoint_dir.hpp"
#include "perf/config_json.hpp"
#include "run/metrics_log.hpp"

namespace microddp::run {

MetricsReport::MetricsReport(const RunFacts& facts, const std::string& path, const std::string& mode) : f_(facts) {
  if (f_.root()) writer_ = open_metrics_log(path, mode, f_.control.run(), f_.control.resumed(), f_.start);
}

void MetricsReport::on_step(const StepReport& step) {
  const bool steady = step.index > f_.start;
  if (f_.config.layer_events && steady) layer_times_.add(perf::layer_backward_times(step.events, step.record.step));
  arrival_.add(step.events, step.record.step, /*keep=*/steady);
  if (writer_) {
    writer_->write_step(step.stats, step.record.loss, step.samples_per_s, std::chrono::system_clock::now(), step.epoch,
                        step.record.lr, step.record.grad_norm);
  }
}

void MetricsReport::on_validation(const ValidationReport& v) {
  if (!writer_) return;
  nlohmann::json j{{"type", "validation"},
                   {"step", v.step},
                   {"epoch", v.epoch},
                   {"loss", v.counts.mean_loss()},
                   {"accuracy", v.counts.accuracy()},
                   {"correct", v.counts.correct},
                   {"rows", v.counts.rows}};
  if (f_.best.active()) j["best"] = v.improved;
  writer_->write(j);
}

// Collective (every rank has the metrics option): one all-reduce of the kept steps' arrivals.
void MetricsReport::before_end(comm::Communicator& comm) { peer_lag_ms_ = arrival_.mean_lag_ms(comm); }

void MetricsReport::on_end(comm::Communicator& /*comm*/, const RunOutcome& outcome) {
  if (!writer_) return;
  nlohmann::json j = run_json(outcome);
  j.update(resources_json(outcome));
  j["type"] = "summary";
  j["config"] = config_json();
  if (f_.config.layer_events) {
    const perf::LayerTimes lt = layer_times_.mean();
    j["layer_backward_ms"] = lt.backward_ms;
    j["layer_ids"] = lt.layer_ids;
  }
  j["median"] = perf::to_json(outcome.summary.median);
  j["mean"] = perf::to_json(outcome.summary.mean);
  writer_->write(j);
}

// Every configuration field (ddp/train_config_fields.hpp), then the run's facts.
nlohmann::json MetricsReport::config_json() const {
  nlohmann::json c = perf::train_config_to_json(f_.config);
  c.update({{"comm", f_.env.backend},
            {"ranks", f_.mpi.size()},
            {"threads", f_.env.threads},
            {"device", f_.ops.device() == core::Device::Cuda ? "cuda" : "cpu"},
            {"ranks_per_node", f_.mpi.local_size()},
            {"cores_per_node", static_cast<int>(std::thread::hardware_concurrency())}});
  return c;
}

// What the run did: steps, losses, the best model, early stopping, validation, epochs, checks.
nlohmann::json MetricsReport::run_json(const RunOutcome& o) const {
  nlohmann::json j;
  j["steps_run"] = o.steps_run;      // by this run
  j["resumed_from_step"] = f_.start;  // 0: a fresh run
  j["first_loss"] = o.first_loss;
  j["final_loss"] = o.last_loss;
  j["total_s"] = o.total_s;
  j["param_checksum"] = o.checksum;
  const BestModel& best = f_.best;
  if (best.have_best()) {
    j["best"] = {{"metric", best.metric()}, {"value", best.best_value()}, {"step", best.best_step()}};
    if (best.saves_best()) j["best"]["path"] = io::best_checkpoint_path(f_.control.checkpoint_dir());
  }
  if (!o.stop_reason.empty()) j["early_stop"] = o.stop_reason;
  j["run_id"] = f_.control.run().run_id;
  if (o.last_val.rows > 0) {
    j["validation"] = {{"step", o.last_val_step},
                       {"loss", o.last_val.mean_loss()},
                       {"accuracy", o.last_val.accuracy()},
                       {"correct", o.last_val.correct},
                       {"rows", o.last_val.rows}};
  }
  if (f_.data != nullptr) {
    const data::EpochSampler& e = f_.data->epochs();
    j["epochs"] = {{"steps_per_epoch", e.steps_per_epoch()},
                   {"train_rows", e.train_rows()},
                   {"dropped_per_epoch", e.dropped_per_epoch()},
                   {"shuffle", e.shuffle()}};
  }
  j["skipped_steps"] = f_.trainer.skipped_steps();
  j["divergence_checks"] = f_.trainer.checks_done();
  return j;
}

// Where the time and the memory went: peer lag, the input pipeline, the CUDA graph, the buffers.
nlohmann::json MetricsReport::resources_json(const RunOutcome& o) const {
  const ddp::Trainer& trainer = f_.trainer;
  nlohmann::json j;
  j["peer_lag_ms"] = peer_lag_ms_;
  j["data"] = {{"exposed_ms_per_step", o.summary.median.data_ms},
               {"background_ms_per_step", o.background_ms_per_step},
               {"prefetch", o.background.depth},
               {"pipeline", trainer.input_note()}};
  j["cuda_graph"] = {{"on", trainer.step_graph().enabled()},
                     {"replays", trainer.step_graph().replays()},
                     {"note", trainer.step_graph().describe()}};
  const ddp::zero::MemoryReport mem = trainer.memory_report();
  j["memory_bytes"] = {{"parameters", mem.parameters},
                       {"gradients", mem.gradients},
                       {"reduced_gradients", mem.reduced_gradients},
                       {"optimizer_state", mem.optimizer_state},
                       {"comm_buffers", mem.comm_buffers},
                       {"activations", mem.activations},
                       {"host_staging", mem.host_staging},
                       {"total", mem.total()}};
  j["uncompressed_bytes_per_step"] = trainer.sync().uncompressed_bytes_per_step();
  return j;
}

}  // namespace microddp::run
