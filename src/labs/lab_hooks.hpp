// lab_hooks.hpp — the seam of lab 05 (docs/labs/05-hooks-overlap): `--strategy lab-overlap` runs the
// student's GradHooks (lab_api.hpp) inside the trainer as a gradient-sync strategy, and records every
// launch and wait so that the grader can tell overlapped communication from serialised.
//
// LabOverlapSync is the production `overlap` strategy with its hook side replaced: one all-reduce
// per parameter, launched through HookRecorder::all_reduce_async, which issues exactly what
// PlannedSync with plan_per_parameter issues (GradSync::launch_unit, asynchronous), so a correct
// lab trains bitwise identically to `overlap`.
//
// Enforced in every run, as a UsageError naming the lab (every rank runs the same code, so every
// rank raises it at the same point): an all-reduce is launched only for a gradient that is ready
// and at most once per step, and when backward_end() returns every gradient has been all-reduced
// and every Work of the step waited for (otherwise the optimizer would read half-reduced gradients).
// Recorded for the grader, and reported once per run as a warning: where each launch and each wait
// happened (in whose hook, in backward_begin, in backward_end). Launching from each gradient's own
// hook and waiting only in backward_end is what makes communication overlap backward.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "comm/work.hpp"
#include "ddp/grad_sync.hpp"
#include "labs/lab_api.hpp"

namespace microddp::labs {

// Where the student's code was running when it launched or waited.
enum class HookPhase { Outside, BackwardBegin, Hook, BackwardEnd };
std::string_view hook_phase_name(HookPhase p);

struct LaunchRecord {
  int grad = 0;  // index of the gradient all-reduced
  HookPhase phase = HookPhase::Outside;
  int hook_grad = -1;  // phase Hook: whose hook launched it
  std::int64_t launch_ns = 0;
  comm::Work work;
  bool waited = false;  // where it was waited for first:
  HookPhase wait_phase = HookPhase::Outside;
  int wait_hook_grad = -1;
  std::int64_t wait_ns = 0;
};

// The OverlapComm lab 05's hooks get: launches through `launch`, records launches and waits.
class HookRecorder final : public OverlapComm {
 public:
  using Launcher = std::function<comm::Work(int grad)>;
  // `names`: the gradients' names in gradient-ready order (kept by reference).
  HookRecorder(int rank, int size, const std::vector<std::string>& names, std::vector<std::int64_t> counts,
               Launcher launch);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  LabWork all_reduce_async(const ReadyGrad& grad) override;

  // ---- driven by LabOverlapSync ----
  void begin_step(std::int64_t step);
  void set_phase(HookPhase phase, int hook_grad = -1) {
    phase_ = phase;
    hook_grad_ = hook_grad;
  }
  void mark_ready(int grad) { ready_[static_cast<std::size_t>(grad)] = 1; }
  // After backward_end(): throws core::UsageError unless every gradient was launched and every
  // launch of this step waited for.
  void check_complete() const;

  // ---- for the grader ----
  std::int64_t step() const { return step_; }
  const std::vector<LaunchRecord>& launches() const { return launches_; }  // this step's, in launch order
  // "" when this step's communication overlapped backward as the overlap strategy does: every
  // gradient launched from its own hook, no wait inside any hook or in backward_begin; otherwise the
  // first departure, explained.
  std::string overlap_violation() const;
  const std::string& grad_name(int grad) const { return names_[static_cast<std::size_t>(grad)]; }

 protected:
  void wait_for(std::int64_t id) override;

 private:
  std::string where(HookPhase phase, int hook_grad) const;
  int rank_, size_;
  const std::vector<std::string>& names_;
  std::vector<std::int64_t> counts_;
  Launcher launch_;
  std::int64_t step_ = -1;
  HookPhase phase_ = HookPhase::Outside;
  int hook_grad_ = -1;
  std::vector<char> ready_, launched_;  // per gradient, this step
  std::vector<LaunchRecord> launches_;  // this step's; capacity: one per gradient
  std::int64_t first_id_ = 0;           // id of launches_[0] (ids count every launch of the run)
  std::int64_t stale_waits_ = 0;  // waits for a Work of an earlier step, this step (overlap_violation)
};

// `--strategy lab-overlap`: the trainer's GradSync around the student's hooks.
class LabOverlapSync final : public ddp::GradSync {
 public:
  LabOverlapSync(comm::Communicator& comm, const std::vector<model::ParamInfo>& params, core::TensorView grads,
                 core::EventLog& events);
  ddp::Strategy strategy() const override;  // `lab-overlap` (lab_strategies.hpp)
  void on_backward_begin(std::int64_t step) override;
  void on_grad_ready(const model::ParamInfo& param) override;
  void finish() override;
  std::int64_t collectives_per_step() const override { return static_cast<std::int64_t>(params_.size()); }
  std::vector<ddp::SyncUnit> units() const override;  // one per parameter, as `overlap`
  const HookRecorder& recorder() const { return recorder_; }

 private:
  std::vector<std::string> names_;
  HookRecorder recorder_;
  std::unique_ptr<GradHooks> hooks_;
  bool warned_ = false;
};

}  // namespace microddp::labs
