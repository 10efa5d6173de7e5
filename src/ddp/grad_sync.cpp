// grad_sync.cpp — shared bookkeeping of strategies and the strategy factory.
#include "ddp/grad_sync.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "ddp/bucket_planner.hpp"
#include "ddp/bucketed_sync.hpp"
#include "ddp/flat_sync.hpp"
#include "ddp/naive_sync.hpp"

namespace microddp::ddp {

GradSync::GradSync(comm::Communicator& comm, const std::vector<model::ParamInfo>& params, core::TensorView grads,
                   core::EventLog& events)
    : comm_(comm), params_(params), grads_(grads), events_(events), ready_(params.size(), 0) {
  for (const auto& p : params) total_count_ += p.count;
  MDDP_CHECK(grads.dtype == core::DType::F32 && grads.count == total_count_,
             "gradient buffer of " << grads.count << " elements for parameters of " << total_count_);
}

void GradSync::on_backward_begin(std::int64_t step) {
  step_ = step;
  std::fill(ready_.begin(), ready_.end(), 0);
}

void GradSync::on_grad_ready(const model::ParamInfo& param) {
  MDDP_CHECK(param.index >= 0 && static_cast<std::size_t>(param.index) < ready_.size(), "unknown parameter " << param.name);
  MDDP_CHECK(!ready_[static_cast<std::size_t>(param.index)], "parameter " << param.name << " reported ready twice in one backward");
  ready_[static_cast<std::size_t>(param.index)] = 1;
  const std::int64_t now = core::now_ns();
  events_.record(core::EventKind::GradReady, step_, param.index, now, now, param.count * 4);
}

void GradSync::check_all_ready() const {
  for (std::size_t i = 0; i < ready_.size(); ++i) {
    MDDP_CHECK(ready_[i], "parameter " << params_[i].name << " received no gradient in step " << step_
                                       << "; its collective would never match the other ranks'");
  }
}

core::TensorView GradSync::grad_slice(std::int64_t offset, std::int64_t count) const {
  return grads_.slice(offset, count);
}

std::int64_t GradSync::bytes_per_step() const { return total_count_ * static_cast<std::int64_t>(sizeof(float)); }

std::string GradSync::collective_label(int id) const {
  if (id >= 0 && static_cast<std::size_t>(id) < params_.size()) return params_[static_cast<std::size_t>(id)].name;
  return "collective " + std::to_string(id);
}

std::vector<std::string_view> available_strategies() { return {"naive", "flat", "overlap", "bucketed"}; }

std::unique_ptr<GradSync> make_grad_sync(std::string_view name, comm::Communicator& comm,
                                         const std::vector<model::ParamInfo>& params, core::TensorView grads,
                                         core::EventLog& events, const GradSyncOptions& options) {
  if (name == "naive") return std::make_unique<NaiveSync>(comm, params, grads, events);
  if (name == "flat") return std::make_unique<FlatSync>(comm, params, grads, events);
  if (name == "overlap") {
    return std::make_unique<BucketedSync>("overlap", plan_per_parameter(params), comm, params, grads, events);
  }
  if (name == "bucketed") {
    MDDP_USAGE_CHECK(options.bucket_mb > 0, "--bucket-mb must be > 0, got " << options.bucket_mb);
    return std::make_unique<BucketedSync>(
        "bucketed", plan_buckets(params, std::max<std::int64_t>(1, mib_to_bytes(options.bucket_mb)),
                                 mib_to_bytes(options.first_bucket_mb)),
        comm, params, grads, events);
  }
  std::string list;
  for (auto s : available_strategies()) list += (list.empty() ? "" : ", ") + std::string(s);
  MDDP_USAGE_CHECK(false, "unknown strategy '" << name << "' (choose " << list << ")");
  return nullptr;
}

}  // namespace microddp::ddp
