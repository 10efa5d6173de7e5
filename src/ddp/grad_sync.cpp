// grad_sync.cpp — shared bookkeeping of strategies, and building one from its row of the strategy table.
#include "ddp/grad_sync.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "ddp/planned_sync.hpp"

namespace microddp::ddp {

GradSync::GradSync(comm::Communicator& comm, const std::vector<model::ParamInfo>& params, core::TensorView grads,
                   core::EventLog& events)
    : comm_(comm), params_(params), grads_(grads), events_(events), ready_(params.size(), 0) {
  total_count_ = grads.count;
  synced_count_ = total_count_;
  const std::int64_t end = params.empty() ? 0 : params.back().offset + params.back().count;
  MDDP_CHECK(grads.dtype == core::DType::F32 && end <= grads.count,
             "gradient buffer of " << grads.count << " elements for parameters ending at element " << end);
  stream_ordered_ = comm.completes_in_stream_order() && grads.device != core::Device::Host;
  deferred_.reserve(params.size() + 1);  // at most one collective per parameter
}

void GradSync::defer(const comm::Work& work, std::int32_t id, std::int64_t launch_ns, std::int64_t bytes) {
  MDDP_CHECK(deferred_.size() < deferred_.capacity(), name() << ": more deferred collectives than parameters");
  deferred_.push_back(Deferred{work, id, launch_ns, bytes});
}

void GradSync::order_compute_after_deferred() {
  // One communication stream is FIFO: waiting for the last collective waits for all of them.
  if (!deferred_.empty()) comm_.order_compute_after(deferred_.back().work);
}

void GradSync::complete(std::int64_t backward_end_ns) {
  if (deferred_.empty()) return;
  // Completion times first: waiting below may re-anchor the communicator's device clock.
  std::int64_t last = backward_end_ns;
  for (const Deferred& d : deferred_) {
    std::int64_t done = d.work.completion_ns();
    if (done == 0) done = core::now_ns();  // untimed: bounded by now (the stream has been synchronised)
    record_collective(d.id, d.launch_ns, d.work.start_ns(), done, d.bytes);
    last = std::max(last, done);
  }
  events_.record(core::EventKind::CommWait, step_, -1, backward_end_ns, last);
  for (const Deferred& d : deferred_) d.work.wait();
  deferred_.clear();
}

void GradSync::record_collective(std::int32_t id, std::int64_t launch_ns, std::int64_t start_ns, std::int64_t done_ns,
                                 std::int64_t bytes, std::int64_t step) {
  const std::int64_t start = std::clamp(start_ns == 0 ? launch_ns : start_ns, launch_ns, std::max(launch_ns, done_ns));
  const std::int64_t at = step >= 0 ? step : step_;
  events_.record(core::EventKind::Collective, at, id, launch_ns, done_ns, bytes);
  events_.record(core::EventKind::CollectiveExec, at, id, start, done_ns, bytes);
}

void GradSync::attach_compressor(std::unique_ptr<GradCompressor> c) {
  MDDP_CHECK(!compressor_, name() << ": a compressor is already attached");
  if (!c) return;
  compressor_ = std::move(c);
  units_ = units();
  for (const SyncUnit& u : units_) compressor_->add_unit(u.offset, u.count, u.first_param, u.end_param);
  stream_ordered_ = false;
}

std::int64_t GradSync::bytes_per_step() const {
  if (!compressor_) return synced_count_ * model::kParamElementBytes;
  std::int64_t bytes = 0;
  for (std::size_t u = 0; u < units_.size(); ++u) bytes += compressor_->unit_wire_bytes(static_cast<int>(u));
  return bytes;
}

comm::Work GradSync::launch_unit(int u, comm::Mode mode) {
  if (compressor_) return compressor_->start(u, mode);
  const SyncUnit& unit = units_[static_cast<std::size_t>(u)];
  return comm_.all_reduce(grad_slice(unit.offset, unit.count), comm::ReduceOp::Sum, mode);
}

void GradSync::complete_unit(int u) {
  if (compressor_) compressor_->finish(u);
}

std::int64_t GradSync::unit_bytes(int u) const {
  if (compressor_) return compressor_->unit_wire_bytes(u);
  return units_[static_cast<std::size_t>(u)].count * model::kParamElementBytes;
}

void GradSync::on_backward_begin(std::int64_t step) {
  step_ = step;
  if (units_.empty()) units_ = units();  // once (the first step), so launching allocates nothing
  if (compressor_) compressor_->begin_step(step);
  std::fill(ready_.begin(), ready_.end(), 0);
}

void GradSync::on_grad_ready(const model::ParamInfo& param) {
  MDDP_CHECK(param.index >= 0 && static_cast<std::size_t>(param.index) < ready_.size(),
             "unknown parameter " << param.name);
  MDDP_CHECK(!ready_[static_cast<std::size_t>(param.index)],
             "parameter " << param.name << " reported ready twice in one backward");
  ready_[static_cast<std::size_t>(param.index)] = 1;
  const std::int64_t now = core::now_ns();
  events_.record(core::EventKind::GradReady, step_, param.index, now, now, param.count * model::kParamElementBytes);
}

void GradSync::check_all_ready() const {
  for (std::size_t i = 0; i < ready_.size(); ++i) {
    MDDP_CHECK(ready_[i], "parameter " << params_[i].name << " received no gradient in step " << step_
                                       << "; its collective would never match the other ranks'");
  }
}

core::TensorView GradSync::grad_slice(std::int64_t offset, std::int64_t count) const {
  return grads_.slice(offset, count);
}

std::string GradSync::collective_label(int id) const {
  if (id >= 0 && static_cast<std::size_t>(id) < params_.size()) return params_[static_cast<std::size_t>(id)].name;
  return "collective " + std::to_string(id);
}

std::unique_ptr<GradSync> make_grad_sync(Strategy strategy, comm::Communicator& comm,
                                         const std::vector<model::ParamInfo>& params, core::TensorView grads,
                                         core::EventLog& events, const GradSyncOptions& options,
                                         const GradCompressionConfig& compression, kernels::Ops& ops,
                                         std::uint64_t seed) {
  // A row may refuse compression (lab 04 hands the student plain fp32 all-reduces: encode/decode
  // would bypass their code).
  const StrategyRow& row = strategy_row(strategy);
  MDDP_USAGE_CHECK(row.no_compression.empty() || compression.mode == CompressionMode::None,
                   "--strategy " << row.name << " (" << row.no_compression << ") with --grad-compression "
                                 << compression_mode_name(compression.mode) << " is not supported: leave it at none");
  auto sync = make_grad_sync(strategy, comm, params, grads, events, options);
  sync->attach_compressor(make_grad_compressor(compression, seed, comm, ops, params, grads));
  return sync;
}

std::unique_ptr<GradSync> make_grad_sync(Strategy strategy, comm::Communicator& comm,
                                         const std::vector<model::ParamInfo>& params, core::TensorView grads,
                                         core::EventLog& events, const GradSyncOptions& options) {
  const StrategyRow& row = strategy_row(strategy);
  if (row.make != nullptr) return row.make(strategy, comm, params, grads, events, options);
  return std::make_unique<PlannedSync>(strategy, row.plan(params, grads.count, options), row.launch, comm, params,
                                       grads, events);
}

}  // namespace microddp::ddp
