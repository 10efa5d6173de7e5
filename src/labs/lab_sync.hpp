// lab_sync.hpp — the seam through which a student's naive data parallelism (lab 04,
// docs/labs/04-naive-dp) runs inside the real trainer: `--strategy lab` in train, bench ddp and
// every other command that takes --strategy.
//
// LabSync is a GradSync strategy like naive (a PlannedSync launched after backward): backward
// reports each gradient ready, and after backward finish() calls the student's naive_data_parallel_sync (lab_api.hpp) with a
// GradSyncContext over the flat gradient buffer. Each all_reduce_sum the student makes is one
// blocking fp32 sum all-reduce on the program's communicator, recorded in the event log like
// naive's (Collective and CollectiveExec; CommWait for the whole finish), so the step table,
// traces and `analyze` see the student's collectives. It needs host gradients (--device cpu):
// the student's code may read and write them.
#pragma once

#include <memory>
#include <vector>

#include "ddp/grad_sync.hpp"
#include "labs/lab_api.hpp"

namespace microddp::labs {

class LabSync final : public ddp::GradSync {
 public:
  LabSync(comm::Communicator& comm, const std::vector<model::ParamInfo>& params, core::TensorView grads,
          core::EventLog& events);
  ddp::Strategy strategy() const override;  // `lab` (lab_strategies.hpp)
  void finish() override;
  std::int64_t collectives_per_step() const override { return static_cast<std::int64_t>(params_.size()); }
  std::vector<ddp::SyncUnit> units() const override;  // naive's: one per parameter
  // The context of the last finish() (the grader reads its calls).
  const GradSyncContext& context() const { return ctx_; }

 private:
  friend class GradSyncContext;
  void all_reduce_sum(float* data, std::int64_t count);
  GradSyncContext ctx_;
};

}  // namespace microddp::labs
