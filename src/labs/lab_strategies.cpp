// lab_strategies.cpp — the lab strategies' rows of the strategy table (see lab_strategies.hpp).
#include "labs/lab_strategies.hpp"

#include "ddp/bucketed_sync.hpp"
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
  return std::make_unique<ddp::BucketedSync>(self, lab_plan_buckets(params, caps.cap_bytes, caps.first_cap_bytes), comm,
                                             params, grads, events);
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

const LabStrategies& lab_strategies() {
  static const LabStrategies rows{
      ddp::register_strategy({"lab", "YOUR naive data parallelism, lab 04 (docs/labs/04-naive-dp)", false,
                              ddp::Strategy::Naive, &make_naive_dp, kNoShard,
                              // It hands the student plain fp32 all-reduces: encode/decode would bypass their code.
                              "lab 04"}),
      ddp::register_strategy({"lab-overlap", "overlap with YOUR hooks, lab 05 (docs/labs/05-hooks-overlap)", true,
                              ddp::Strategy::Overlap, &make_overlap, kNoShard}),
      ddp::register_strategy({"lab-bucketed", "bucketed with YOUR bucket planner, lab 06 (docs/labs/06-bucketing)",
                              true, ddp::Strategy::Bucketed, &make_bucketed, kNoShard}),
      ddp::register_strategy({"lab-zero1", "YOUR ZeRO stage 1, lab 09 (docs/labs/09-zero1)", false, ddp::Strategy::Flat,
                              &make_zero1,
                              // It is sharded already, by the student's code and its own update.
                              "a course lab that shards the optimizer state itself, docs/labs",
                              // It hands the student plain fp32 collectives.
                              "lab 09", &make_zero1_update}),
  };
  return rows;
}

}  // namespace microddp::labs
