// step_timing.cpp — device marks to phase events.
#include "ddp/step_timing.hpp"

namespace microddp::ddp {

StepTiming::StepTiming(kernels::Ops& ops, core::EventLog& events, std::int64_t micro_steps)
    : ops_(ops), events_(events), marks_known_at_once_(ops.completes_on_return()) {
  marks_.resize(static_cast<std::size_t>(micro_steps));
}

bool StepTiming::timed(std::int64_t k) const {
  return marks_known_at_once_ || k < kTimedMicroSteps || k + 1 == static_cast<std::int64_t>(marks_.size());
}

void StepTiming::forward_begin(std::int64_t k) {
  if (timed(k)) marks_[static_cast<std::size_t>(k)].forward_begin = ops_.mark();
}

void StepTiming::forward_end(std::int64_t step, std::int64_t k, const Waits& waits) {
  if (!timed(k)) return;
  MicroMarks& m = marks_[static_cast<std::size_t>(k)];
  m.forward_end = ops_.mark();
  if (!marks_known_at_once_) return;  // recorded by record_resolved()
  const std::int64_t end_ns = ops_.mark_ns(m.forward_end);
  std::int64_t at = ops_.mark_ns(m.forward_begin);
  for (const auto& [wb, we] : waits) {
    if (wb < at || we > end_ns) continue;
    events_.record(core::EventKind::Forward, step, -1, at, wb);
    at = we;
  }
  events_.record(core::EventKind::Forward, step, -1, at, end_ns);
}

void StepTiming::backward_begin(std::int64_t k) {
  if (timed(k)) marks_[static_cast<std::size_t>(k)].backward_begin = ops_.mark();
}

void StepTiming::backward_end(std::int64_t step, std::int64_t k) {
  if (!timed(k)) return;
  MicroMarks& m = marks_[static_cast<std::size_t>(k)];
  m.backward_end = ops_.mark();
  if (marks_known_at_once_) {
    events_.record(core::EventKind::Backward, step, -1, ops_.mark_ns(m.backward_begin), ops_.mark_ns(m.backward_end));
  }
}

void StepTiming::optimizer_begin() { optimizer_marks_[0] = ops_.mark(); }

void StepTiming::optimizer_end(std::int64_t step) {
  optimizer_marks_[1] = ops_.mark();
  if (marks_known_at_once_) {
    events_.record(core::EventKind::Optimizer, step, -1, ops_.mark_ns(optimizer_marks_[0]),
                   ops_.mark_ns(optimizer_marks_[1]));
  } else {
    optimizer_pending_ = true;  // queued: resolved at the next synchronisation
  }
}

void StepTiming::record_resolved(std::int64_t step) {
  if (marks_known_at_once_) return;
  const auto micro_steps = static_cast<std::int64_t>(marks_.size());
  for (std::int64_t k = 0; k < micro_steps; ++k) {
    if (!timed(k)) continue;
    const MicroMarks& m = marks_[static_cast<std::size_t>(k)];
    events_.record(core::EventKind::Forward, step, -1, ops_.mark_ns(m.forward_begin), ops_.mark_ns(m.forward_end));
    events_.record(core::EventKind::Backward, step, -1, ops_.mark_ns(m.backward_begin), ops_.mark_ns(m.backward_end));
  }
  if (optimizer_pending_) {  // the previous step's optimizer ran in this step's interval
    events_.record(core::EventKind::Optimizer, step, -1, ops_.mark_ns(optimizer_marks_[0]),
                   ops_.mark_ns(optimizer_marks_[1]));
    optimizer_pending_ = false;
  }
}

void StepTiming::record_graph_optimizer(std::int64_t step) {
  if (!graph_optimizer_) return;
  events_.record(core::EventKind::Optimizer, step, -1, ops_.mark_ns(graph_optimizer_marks_[0]),
                 ops_.mark_ns(graph_optimizer_marks_[1]));
}

}  // namespace microddp::ddp
