// A typical wrong lab 05 (the grader must fail it, saying why: labs.overlap_grader_catches_serialised):
// every hook waits for the all-reduce it has just launched. The results are right, but while a hook
// waits backward cannot go on, so communication never overlaps compute.
#include <memory>

#include "labs/lab_api.hpp"

namespace microddp::labs {

namespace {

class SerialisedHooks final : public GradHooks {
 public:
  explicit SerialisedHooks(OverlapComm& comm) : comm_(comm) {}
  void backward_begin() override {}
  void grad_ready(const ReadyGrad& grad) override { comm_.all_reduce_async(grad).wait(); }
  void backward_end() override {}

 private:
  OverlapComm& comm_;
};

}  // namespace

std::unique_ptr<GradHooks> make_overlap_hooks(OverlapComm& comm) { return std::make_unique<SerialisedHooks>(comm); }

}  // namespace microddp::labs
