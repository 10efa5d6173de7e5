// bucketed_sync.hpp — `bucketed` and `overlap` DDP: asynchronous all-reduces launched DURING
// backward, so communication of the last layers' gradients overlaps the compute of the first.
//
//   bucketed  the flat gradient buffer is cut into buckets (bucket_planner.hpp: --bucket-mb,
//             optional smaller --first-bucket-mb); a bucket's async all-reduce is launched the
//             moment its last gradient is ready (the PyTorch DDP reducer's idea).
//   overlap   the same machinery with one bucket per parameter: maximal overlap, but one
//             collective latency per parameter.
//
// Contract: buckets are launched strictly in index order on every rank (a bucket that became
// complete early waits for all lower-indexed buckets), so all ranks issue the same collective
// sequence. Launching allocates nothing (Work handles and timestamps are preallocated). finish()
// waits for every bucket; the time it blocks is the exposed communication (CommWait). Each bucket's
// Collective event runs from its launch to the completion time measured on the communication
// thread (Work::completion_ns()), its CollectiveExec event from the moment that thread picked it up
// (Work::start_ns()): with many small buckets most of launch -> completion is queueing.
#pragma once

#include <string>
#include <vector>

#include "ddp/bucket_planner.hpp"
#include "ddp/grad_sync.hpp"

namespace microddp::ddp {

class BucketedSync final : public GradSync {
 public:
  // `strategy`: the row it is built for (overlap: one bucket per parameter; bucketed; or a registered
  // row with a plan of its own); it only names the synchroniser.
  BucketedSync(Strategy strategy, std::vector<Bucket> plan, comm::Communicator& comm,
               const std::vector<model::ParamInfo>& params, core::TensorView grads, core::EventLog& events);
  Strategy strategy() const override { return strategy_; }
  void on_backward_begin(std::int64_t step) override;
  void on_grad_ready(const model::ParamInfo& param) override;
  void finish() override;
  std::int64_t collectives_per_step() const override { return static_cast<std::int64_t>(plan_.size()); }
  std::string collective_label(int id) const override;
  const std::vector<Bucket>& buckets() const { return plan_; }
  std::vector<SyncUnit> units() const override;

 private:
  void launch(std::size_t b);

  Strategy strategy_;
  std::vector<Bucket> plan_;
  std::vector<int> bucket_of_;           // parameter index -> bucket index
  std::vector<int> pending_;             // per bucket: gradients not yet ready in this backward
  std::vector<comm::Work> work_;         // per bucket
  std::vector<std::int64_t> launch_ns_;  // per bucket
  std::size_t next_launch_ = 0;          // buckets [0, next_launch_) are launched
};

}  // namespace microddp::ddp
