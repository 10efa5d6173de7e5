// lab_hooks.cpp — see lab_hooks.hpp.
#include "labs/lab_hooks.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"
#include "labs/lab_strategies.hpp"

namespace microddp::labs {

namespace {
constexpr const char* kLab = "lab 05 (docs/labs/05-hooks-overlap/overlap_hooks.cpp)";
}  // namespace

std::string_view hook_phase_name(HookPhase p) {
  switch (p) {
    case HookPhase::Outside:
      return "outside the hooks";
    case HookPhase::BackwardBegin:
      return "backward_begin()";
    case HookPhase::Hook:
      return "grad_ready()";
    case HookPhase::BackwardEnd:
      return "backward_end()";
  }
  return "?";
}

HookRecorder::HookRecorder(int rank, int size, const std::vector<std::string>& names, std::vector<std::int64_t> counts,
                           Launcher launch)
    : rank_(rank),
      size_(size),
      names_(names),
      counts_(std::move(counts)),
      launch_(std::move(launch)),
      ready_(names.size(), 0),
      launched_(names.size(), 0) {
  launches_.reserve(names.size());  // one per gradient: launching allocates nothing
}

std::string HookRecorder::where(HookPhase phase, int hook_grad) const {
  if (phase == HookPhase::Hook) return "grad_ready(" + grad_name(hook_grad) + ")";
  return std::string(hook_phase_name(phase));
}

void HookRecorder::begin_step(std::int64_t step) {
  step_ = step;
  first_id_ += static_cast<std::int64_t>(launches_.size());
  launches_.clear();
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(launched_.begin(), launched_.end(), 0);
  stale_waits_ = 0;
}

LabWork HookRecorder::all_reduce_async(const ReadyGrad& grad) {
  const int n = static_cast<int>(names_.size());
  MDDP_AGREED_USAGE_CHECK(
      grad.index >= 0 && grad.index < n && counts_[static_cast<std::size_t>(grad.index)] == grad.count,
      kLab << ": all_reduce_async got a gradient (index " << grad.index << ", " << grad.count
           << " floats) that is not one of the " << n
           << " the hooks were given: pass the ReadyGrad that grad_ready() received");
  const auto g = static_cast<std::size_t>(grad.index);
  MDDP_AGREED_USAGE_CHECK(ready_[g], kLab << ": all_reduce_async(" << names_[g] << ") in " << where(phase_, hook_grad_)
                                          << ", before that gradient was ready: backward has not computed it yet, so "
                                             "the all-reduce would sum stale values. Launch it from its own hook");
  MDDP_AGREED_USAGE_CHECK(!launched_[g], kLab << ": the gradient " << names_[g] << " was all-reduced twice in step "
                                              << step_ + 1
                                              << " (each all-reduce adds every rank's copy again): launch it once");
  launched_[g] = 1;
  LaunchRecord r;
  r.grad = grad.index;
  r.phase = phase_;
  r.hook_grad = hook_grad_;
  r.launch_ns = core::now_ns();
  r.work = launch_(grad.index);
  launches_.push_back(r);
  return make_work(this, first_id_ + static_cast<std::int64_t>(launches_.size()) - 1);
}

void HookRecorder::wait_for(std::int64_t id) {
  if (id < first_id_) {  // a Work of an earlier step: complete and waited for in its own step
    ++stale_waits_;
    return;
  }
  MDDP_CHECK(id < first_id_ + static_cast<std::int64_t>(launches_.size()), "LabWork " << id << " was never issued");
  LaunchRecord& r = launches_[static_cast<std::size_t>(id - first_id_)];
  if (!r.waited) {  // a repeated wait keeps the first wait's record
    r.waited = true;
    r.wait_phase = phase_;
    r.wait_hook_grad = hook_grad_;
    r.wait_ns = core::now_ns();
  }
  r.work.wait();
}

void HookRecorder::check_complete() const {
  for (std::size_t g = 0; g < names_.size(); ++g) {
    MDDP_AGREED_USAGE_CHECK(launched_[g], kLab << ": backward_end() returned, but the gradient " << names_[g]
                                               << " was never all-reduced in step " << step_ + 1
                                               << ": every rank would update with its own gradient only");
  }
  for (const LaunchRecord& r : launches_) {
    MDDP_AGREED_USAGE_CHECK(r.waited, kLab << ": backward_end() returned while the all-reduce of " << grad_name(r.grad)
                                           << " (launched in " << where(r.phase, r.hook_grad)
                                           << ") had not been waited for: the optimizer would read a gradient that "
                                              "is still being summed. Keep every LabWork and wait() for each");
  }
}

std::string HookRecorder::overlap_violation() const {
  std::ostringstream os;
  for (const LaunchRecord& r : launches_) {
    const std::string& name = grad_name(r.grad);
    if (r.waited && (r.wait_phase == HookPhase::Hook || r.wait_phase == HookPhase::BackwardBegin)) {
      os << "the all-reduce of " << name << " was waited for in " << where(r.wait_phase, r.wait_hook_grad);
      const bool at_once = r.wait_phase == HookPhase::Hook && r.wait_hook_grad == r.grad && r.hook_grad == r.grad;
      os << (at_once ? ", right after it was launched" : "")
         << ": communication is serialised with backward. While a hook waits, backward cannot compute the next "
            "layer until that all-reduce is done, "
         << (at_once ? "so each all-reduce runs alone and nothing overlaps (the `naive` strategy with extra steps)"
                     : "so communication and backward take turns instead of running together")
         << ". Keep the LabWork and wait for all of them in backward_end()";
      return os.str();
    }
    if (r.phase == HookPhase::BackwardEnd || r.phase == HookPhase::Outside) {
      os << "the all-reduce of " << name << " was launched in " << where(r.phase, r.hook_grad)
         << ", after backward had ended: it cannot overlap backward (that is the `naive` strategy). Launch each "
            "all-reduce from its gradient's grad_ready() hook";
      return os.str();
    }
    if (r.phase == HookPhase::Hook && r.hook_grad != r.grad) {
      os << "the all-reduce of " << name << " was launched in " << where(r.phase, r.hook_grad)
         << ", not in its own hook: it waited for a later gradient without need. Launch each all-reduce the moment "
            "its gradient is ready";
      return os.str();
    }
  }
  if (stale_waits_ > 0) {
    os << stale_waits_ << " wait(s) in step " << step_ + 1
       << " were for LabWorks of an earlier step: the list of Works is never cleared, so it grows every step (and "
          "the step must allocate nothing). Clear it in backward_begin() or after waiting";
    return os.str();
  }
  return "";
}

ddp::Strategy LabOverlapSync::strategy() const { return lab_strategies().overlap; }

LabOverlapSync::LabOverlapSync(comm::Communicator& comm, const std::vector<model::ParamInfo>& params,
                               core::TensorView grads, core::EventLog& events)
    : GradSync(comm, params, grads, events),
      names_([&params] {
        std::vector<std::string> n;
        for (const auto& p : params) n.push_back(p.name);
        return n;
      }()),
      recorder_(
          comm.rank(), comm.size(), names_,
          [&params] {
            std::vector<std::int64_t> c;
            for (const auto& p : params) c.push_back(p.count);
            return c;
          }(),
          [this](int grad) { return launch_unit(grad, comm::Mode::Async); }) {
  synced_count_ = 0;  // one all-reduce per parameter: the padding between them is not sent
  for (const auto& p : params) synced_count_ += p.count;
  hooks_ = make_overlap_hooks(recorder_);
  MDDP_AGREED_USAGE_CHECK(hooks_ != nullptr, kLab << ": make_overlap_hooks returned no hooks");
}

std::vector<ddp::SyncUnit> LabOverlapSync::units() const {
  std::vector<ddp::SyncUnit> u;
  for (const auto& p : params_) u.push_back({p.offset, p.count, p.index, p.index + 1});
  return u;
}

void LabOverlapSync::on_backward_begin(std::int64_t step) {
  GradSync::on_backward_begin(step);
  recorder_.begin_step(step);
  recorder_.set_phase(HookPhase::BackwardBegin);
  hooks_->backward_begin();
  recorder_.set_phase(HookPhase::Outside);
}

void LabOverlapSync::on_grad_ready(const model::ParamInfo& param) {
  GradSync::on_grad_ready(param);  // validates the index and records the GradReady instant
  recorder_.mark_ready(param.index);
  recorder_.set_phase(HookPhase::Hook, param.index);
  hooks_->grad_ready(ReadyGrad{param.index, param.name, param.count});
  recorder_.set_phase(HookPhase::Outside);
}

void LabOverlapSync::finish() {
  check_all_ready();
  const std::int64_t wait_begin = core::now_ns();
  recorder_.set_phase(HookPhase::BackwardEnd);
  hooks_->backward_end();
  recorder_.set_phase(HookPhase::Outside);
  recorder_.check_complete();
  // Compression's second phase and decode, in parameter order (as PlannedSync does).
  for (std::size_t u = 0; u < params_.size(); ++u) complete_unit(static_cast<int>(u));
  const std::int64_t wait_end = core::now_ns();
  events_.record(core::EventKind::CommWait, step_, -1, wait_begin, wait_end);
  for (const LaunchRecord& r : recorder_.launches()) {
    std::int64_t done = r.work.completion_ns();
    if (done == 0) done = std::max(r.wait_ns, r.launch_ns);  // timestamp unavailable: bound it by the wait
    record_collective(r.grad, r.launch_ns, r.work.start_ns(), done, unit_bytes(r.grad));
  }
  if (!warned_ && comm_.rank() == 0) {
    const std::string why = recorder_.overlap_violation();
    if (!why.empty()) {
      warned_ = true;
      MDDP_WARN(kLab << ", step " << step_ + 1 << ": " << why
                     << " (reported once per run; ctest -L lab -R overlap grades it)");
    }
  }
}

}  // namespace microddp::labs
