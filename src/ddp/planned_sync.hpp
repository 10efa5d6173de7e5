// planned_sync.hpp — the one synchroniser of the production strategies: a strategy row's bucket plan
// run with its launch rule (ddp/strategy.hpp). Each bucket is one contiguous slice of the flat
// gradient buffer (no packing copy) and one all-reduce (sum), or its compressor's encode ->
// collective(s) -> decode.
//
//   Launch::AfterBackward   finish() all-reduces the buckets one after the other, blocking (naive:
//                           one bucket per parameter; flat: one bucket, the whole buffer). Nothing
//                           overlaps backward. On a stream-ordered communicator they are queued
//                           instead and the compute stream waits for them.
//   Launch::DuringBackward  a bucket's async all-reduce is launched from on_grad_ready the moment
//                           its last gradient is ready (the PyTorch DDP reducer's idea; overlap: one
//                           bucket per parameter; bucketed: --bucket-mb buckets), so communication of
//                           the last layers' gradients overlaps the compute of the first. finish()
//                           waits for every bucket; the time it blocks is the exposed communication.
//
// Contract: buckets are launched strictly in index order on every rank (a bucket that became
// complete early waits for all lower-indexed buckets), so all ranks issue the same collective
// sequence. Launching allocates nothing (Work handles and timestamps are preallocated). The time
// finish() blocks is recorded as CommWait. A synchronous bucket's Collective event runs from its call
// to its return; an asynchronous one's from its launch to the completion time measured on the
// communication thread (Work::completion_ns()), its CollectiveExec event from the moment that thread
// picked it up (Work::start_ns()): with many small buckets most of launch -> completion is queueing.
#pragma once

#include <string>
#include <vector>

#include "ddp/bucket_planner.hpp"
#include "ddp/grad_sync.hpp"

namespace microddp::ddp {

class PlannedSync final : public GradSync {
 public:
  // `strategy`: the row it is built for (it only names the synchroniser); `plan` covers every
  // parameter in order (a row's plan, or a lab's).
  PlannedSync(Strategy strategy, std::vector<Bucket> plan, Launch launch, comm::Communicator& comm,
              const std::vector<model::ParamInfo>& params, core::TensorView grads, core::EventLog& events);
  Strategy strategy() const override { return strategy_; }
  void on_backward_begin(std::int64_t step) override;
  void on_grad_ready(const model::ParamInfo& param) override;
  void finish() override;
  std::int64_t collectives_per_step() const override { return static_cast<std::int64_t>(plan_.size()); }
  std::string collective_label(int id) const override;
  const std::vector<Bucket>& buckets() const { return plan_; }
  Launch launch_rule() const { return launch_; }
  std::vector<SyncUnit> units() const override;

 private:
  void launch(std::size_t b);
  void finish_after_backward();
  void finish_during_backward();

  Strategy strategy_;
  std::vector<Bucket> plan_;
  Launch launch_;
  std::vector<int> bucket_of_;           // parameter index -> bucket index
  std::vector<int> pending_;             // per bucket: gradients not yet ready in this backward
  std::vector<comm::Work> work_;         // per bucket
  std::vector<std::int64_t> launch_ns_;  // per bucket
  std::size_t next_launch_ = 0;          // buckets [0, next_launch_) are launched
};

}  // namespace microddp::ddp
