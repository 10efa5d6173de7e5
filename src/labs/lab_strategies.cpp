// lab_strategies.cpp — the lab strategies' rows of the strategy table (see lab_strategies.hpp).
#include "labs/lab_strategies.hpp"

#include "ddp/planned_sync.hpp"
#include "labs/lab_hooks.hpp"
#include "labs/lab_planner.hpp"
#include "labs/lab_sync.hpp"
#include "labs/lab_zero1.hpp"

namespace microddp::labs {

namespace {

using Params = std::vector<model::ParamInfo>;

// Lab 04: the student writes the whole (naive) synchronisation.
std::unique_ptr<ddp::GradSync> make_naive_dp(ddp::Strategy, comm::Communicator& comm, const Params& params,
                                             core::TensorView grads, core::EventLog& events,
                                             const ddp::GradSyncOptions&) {
  return std::make_unique<LabSync>(comm, params, grads, events);
}
// Lab 05: overlap, the student's hooks launch and wait.
std::unique_ptr<ddp::GradSync> make_overlap(ddp::Strategy, comm::Communicator& comm, const Params& params,
                                            core::TensorView grads, core::EventLog& events,
                                            const ddp::GradSyncOptions&) {
  return std::make_unique<LabOverlapSync>(comm, params, grads, events);
}
// Lab 06: the production bucketed strategy on the student's bucket plan.
std::unique_ptr<ddp::GradSync> make_bucketed(ddp::Strategy self, comm::Communicator& comm, const Params& params,
                                             core::TensorView grads, core::EventLog& events,
                                             const ddp::GradSyncOptions& options) {
  const ddp::BucketCaps caps = ddp::bucket_caps(options);
  return std::make_unique<ddp::PlannedSync>(self, lab_plan_buckets(params, caps.cap_bytes, caps.first_cap_bytes),
                                            ddp::Launch::DuringBackward, comm, params, grads, events);
}

// Lab 09: the student's ZeRO-1 — the sync reduce-scatters, the update steps the shard and gathers.
std::unique_ptr<ddp::GradSync> make_zero1(ddp::Strategy, comm::Communicator& comm, const Params& params,
                                          core::TensorView grads, core::EventLog& events, const ddp::GradSyncOptions&) {
  return std::make_unique<LabZero1Sync>(comm, params, grads, events);
}
std::unique_ptr<ddp::OptimizerUpdate> make_zero1_update(ddp::GradSync& sync, model::FullMLP& model, kernels::Ops& ops,
                                                        const model::OptimizerConfig& config,
                                                        comm::Communicator& comm) {
  return std::make_unique<LabZero1Update>(model, ops, config, comm, dynamic_cast<LabZero1Sync&>(sync));
}

constexpr std::string_view kNoShard = "a course lab, docs/labs";

}  // namespace

// Each row's plan is the production plan its collectives follow (ZeRO, the step model and the
// analysis read it); its maker runs the student's code.
const LabStrategies& lab_strategies() {
  static const LabStrategies rows{
      ddp::register_strategy({.name = "lab",
                              .description = "YOUR naive data parallelism, lab 04 (docs/labs/04-naive-dp)",
                              .plan = &ddp::per_parameter_buckets,
                              .launch = ddp::Launch::AfterBackward,
                              .no_shard = kNoShard,
                              // It hands the student plain fp32 all-reduces: encode/decode would bypass their code.
                              .no_compression = "lab 04",
                              .make = &make_naive_dp}),
      ddp::register_strategy({.name = "lab-overlap",
                              .description = "overlap with YOUR hooks, lab 05 (docs/labs/05-hooks-overlap)",
                              .plan = &ddp::per_parameter_buckets,
                              .launch = ddp::Launch::DuringBackward,
                              .no_shard = kNoShard,
                              .make = &make_overlap}),
      ddp::register_strategy({.name = "lab-bucketed",
                              .description = "bucketed with YOUR bucket planner, lab 06 (docs/labs/06-bucketing)",
                              .plan = &ddp::capped_buckets,
                              .launch = ddp::Launch::DuringBackward,
                              .reads_bucket_caps = true,
                              .no_shard = kNoShard,
                              .make = &make_bucketed}),
      ddp::register_strategy({.name = "lab-zero1",
                              .description = "YOUR ZeRO stage 1, lab 09 (docs/labs/09-zero1)",
                              // Reduce-scatter + all-gather of the whole buffer: one all-reduce's bytes.
                              .plan = &ddp::one_bucket,
                              .launch = ddp::Launch::AfterBackward,
                              // It is sharded already, by the student's code and its own update.
                              .no_shard = "a course lab that shards the optimizer state itself, docs/labs",
                              // It hands the student plain fp32 collectives.
                              .no_compression = "lab 09",
                              .make = &make_zero1,
                              .make_update = &make_zero1_update}),
  };
  return rows;
}

}  // namespace microddp::labs
