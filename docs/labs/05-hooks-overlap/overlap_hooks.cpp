// Lab 05 — hooks and overlap: the hook side of the `overlap` strategy.
// Read docs/labs/05-hooks-overlap/README.md first. Build: cmake --build build; grade:
// ctest --test-dir build -L lab -R overlap (after configuring with -DMICRODDP_LAB_GRADERS=ON).
#include <memory>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

namespace {

// The trainer calls the three hooks in every step that synchronises gradients:
//   backward_begin()    before backward;
//   grad_ready(grad)    from inside backward, the moment `grad` is final — the output layer's
//                       first (grad.index 0, 1, 2, ...). Backward computes the next layer only
//                       when this returns;
//   backward_end()      after backward: return when every gradient holds the SUM over all ranks
//                       (nothing to divide: the loss is already divided by the global batch).
// Available (src/labs/lab_api.hpp): comm_.all_reduce_async(grad) starts the all-reduce of one
// gradient and returns a LabWork at once; work.wait() blocks until that all-reduce is done.
// The point is overlap: launch each all-reduce the moment its gradient is ready, keep its LabWork,
// and wait for them only when backward has ended — never inside a hook, where a wait stops
// backward until the all-reduce is done (the grader fails that, and says why).
class OverlapHooks final : public GradHooks {
 public:
  explicit OverlapHooks(OverlapComm& comm) : comm_(comm) {}

  void backward_begin() override {
    // TODO(lab 05)
  }

  void grad_ready(const ReadyGrad& grad) override {
    // TODO(lab 05): write the three hooks, then delete the next line.
    lab_todo("05-hooks-overlap", "OverlapHooks", "docs/labs/05-hooks-overlap/overlap_hooks.cpp");
    (void)grad;
    (void)comm_;
  }

  void backward_end() override {
    // TODO(lab 05)
  }

 private:
  OverlapComm& comm_;
  std::vector<LabWork> pending_;  // the all-reduces launched in this step and not yet waited for
};

}  // namespace

std::unique_ptr<GradHooks> make_overlap_hooks(OverlapComm& comm) { return std::make_unique<OverlapHooks>(comm); }

}  // namespace microddp::labs
