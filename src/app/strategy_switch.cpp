// strategy_switch.cpp — a run continued in a new Trainer (see strategy_switch.hpp).
#include "app/strategy_switch.hpp"

#include <climits>
#include <cstring>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "core/error.hpp"

namespace microddp::app {

namespace {
// A switch allocates a whole trainer again (model, gradients, optimizer state) plus the host copy:
// about 470 MiB per rank at bench ddp's default size. glibc serves blocks that large with fresh
// mmap'ed pages, and first-touching fresh pages is nearly all a switch costs (measured on the team's
// 2-core VM under load: 280 MiB took 2.5 s, a switch ~12 s, `bench ddp --width 1024` 470 s instead
// of 270 s). Served from the heap, which is then not trimmed, the next trainer reuses the pages the
// previous one freed: there, the first two switches still grow the heap (3-7 s), every later one
// takes ~0.15 s. Process-wide, set once: only the commands that switch strategies (bench ddp,
// analyze) come here, after their first trainer.
void reuse_freed_memory() {
#if defined(__GLIBC__)
  static const bool once = [] {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
    return true;
  }();
  (void)once;
#endif
}
}  // namespace

std::unique_ptr<ddp::Trainer> continue_with(std::unique_ptr<ddp::Trainer> trainer, const ddp::TrainConfig& next,
                                            comm::Communicator& comm, kernels::Ops& ops) {
  MDDP_CHECK(trainer != nullptr, "no trainer to continue");
  reuse_freed_memory();
  trainer->state_to_host();  // collective when sharded: the full optimizer state on every rank
  const ddp::TrainState::HostState& old_view = trainer->host_state();
  std::vector<float> params(old_view.params, old_view.params + old_view.param_count);
  std::vector<std::vector<float>> state;
  for (const auto& b : old_view.optimizer) state.emplace_back(b.data, b.data + b.count);
  const std::int64_t steps_done = trainer->steps_done();
  const std::int64_t optimizer_steps = trainer->optimizer_steps();
  comm.synchronize();  // nothing of the old run's may still be in flight
  trainer.reset();

  auto t = std::make_unique<ddp::Trainer>(next, comm, ops);
  const ddp::TrainState::HostState& view = t->host_state();
  MDDP_CHECK(view.param_count == static_cast<std::int64_t>(params.size()) && view.optimizer.size() == state.size(),
             "continue_with: the new configuration has another model or optimizer");
  std::memcpy(view.params, params.data(), params.size() * sizeof(float));
  for (std::size_t i = 0; i < state.size(); ++i) {
    std::memcpy(view.optimizer[i].data, state[i].data(), state[i].size() * sizeof(float));
  }
  t->state_from_host();
  t->restore_progress(steps_done, optimizer_steps);  // collective: all ranks hold the same state
  return t;
}

}  // namespace microddp::app
