// lab_strategies.cpp — see lab_strategies.hpp.
#include "labs/lab_strategies.hpp"

#include "core/error.hpp"
#include "ddp/bucketed_sync.hpp"
#include "labs/lab_hooks.hpp"
#include "labs/lab_planner.hpp"
#include "labs/lab_sync.hpp"

namespace microddp::labs {

std::unique_ptr<ddp::GradSync> make_lab_strategy(ddp::Strategy strategy, comm::Communicator& comm,
                                                 const std::vector<model::ParamInfo>& params, core::TensorView grads,
                                                 core::EventLog& events, const ddp::GradSyncOptions& options) {
  switch (strategy) {
    case ddp::Strategy::Lab:  // lab 04: the student writes the whole (naive) synchronisation
      return make_lab_sync(comm, params, grads, events);
    case ddp::Strategy::LabOverlap:
      return std::make_unique<LabOverlapSync>(comm, params, grads, events);
    case ddp::Strategy::LabBucketed: {
      const ddp::BucketCaps caps = ddp::bucket_caps(options);
      return std::make_unique<ddp::BucketedSync>(strategy, lab_plan_buckets(params, caps.cap_bytes, caps.first_cap_bytes),
                                                 comm, params, grads, events);
    }
    default:
      break;
  }
  MDDP_CHECK(false, "strategy " << ddp::strategy_name(strategy) << " is not a lab strategy");
  return nullptr;
}

}  // namespace microddp::labs
