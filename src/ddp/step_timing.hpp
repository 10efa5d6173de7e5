// step_timing.hpp — when the compute phases of a step ran: device marks (Ops::mark) around forward,
// backward and the optimizer, turned into the Forward, Backward and Optimizer events of the event
// log (the one source of timing truth: step table, traces and analysis read those events).
//
// CPU: a mark is the host clock, known at once, so each phase's event is recorded when it ends.
// GPU: marks are CUDA events, resolved only at the step's one synchronisation (numerics_verdict.hpp):
// record_resolved() then records every timed micro-step's forward and backward; the optimizer of
// step s is queued after that synchronisation, so it is resolved at step s+1's and recorded in step
// s+1, the interval in which the device ran it; inside a CUDA graph it is part of step s's replay,
// resolved and recorded with step s.
// A GPU step's marks must fit Ops::kMarkSlots: beyond kTimedMicroSteps micro-steps only the last
// micro-step's phases are timed (the step, communication and loss times stay complete).
// Contract: nothing allocates (marks sized once); each event is recorded once, under the step whose
// interval it ran in.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/event_log.hpp"
#include "kernels/ops.hpp"

namespace microddp::ddp {

class StepTiming {
 public:
  // 4 marks per micro-step and the optimizer's 2 must fit the ring of kMarkSlots.
  static constexpr std::int64_t kTimedMicroSteps = 200;
  static_assert(4 * (kTimedMicroSteps + 1) + 2 <= kernels::Ops::kMarkSlots, "marks of one step must fit the ring");
  // Host intervals [begin, end) in nanoseconds.
  using Waits = std::vector<std::pair<std::int64_t, std::int64_t>>;

  StepTiming(kernels::Ops& ops, core::EventLog& events, std::int64_t micro_steps);

  // Micro-step k of `step` (of micro_steps per step). forward_end() records Forward minus `waits`,
  // the host intervals inside it spent waiting for parameters (recorded as CommWait by their waiter).
  void forward_begin(std::int64_t k);
  void forward_end(std::int64_t step, std::int64_t k, const Waits& waits);
  void backward_begin(std::int64_t k);
  void backward_end(std::int64_t step, std::int64_t k);
  void optimizer_begin();
  void optimizer_end(std::int64_t step);
  // When the last micro-step's backward ended (after the synchronisation on a GPU).
  std::int64_t backward_end_ns() const { return ops_.mark_ns(marks_.back().backward_end); }
  // GPU, after the step's synchronisation: the phases whose marks it resolved (no-op on the CPU).
  void record_resolved(std::int64_t step);
  // The optimizer inside the step's CUDA graph: its marks are recorded by the capture and again by
  // every replay, before the step's synchronisation; record_graph_optimizer(step) records the
  // interval of this step's replay (a step the device skipped shows an empty one).
  void graph_optimizer_begin() { graph_optimizer_marks_[0] = ops_.mark(); }
  void graph_optimizer_end() {
    graph_optimizer_marks_[1] = ops_.mark();
    graph_optimizer_ = true;
  }
  void record_graph_optimizer(std::int64_t step);

 private:
  bool timed(std::int64_t k) const;
  struct MicroMarks {
    std::uint32_t forward_begin = 0, forward_end = 0, backward_begin = 0, backward_end = 0;
  };
  kernels::Ops& ops_;
  core::EventLog& events_;
  bool marks_known_at_once_;  // Ops::completes_on_return(): the CPU's marks are host times
  std::vector<MicroMarks> marks_;  // one per micro-step, sized once
  std::uint32_t optimizer_marks_[2] = {0, 0};
  bool optimizer_pending_ = false;  // GPU: the last optimizer's marks await the next synchronisation
  std::uint32_t graph_optimizer_marks_[2] = {0, 0};  // owned by the graph (ids never reused)
  bool graph_optimizer_ = false;
};

}  // namespace microddp::ddp
