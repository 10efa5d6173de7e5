// lab_sync.cpp — see lab_sync.hpp.
#include "labs/lab_sync.hpp"

#include "core/error.hpp"
#include "core/timer.hpp"
#include "labs/lab_strategies.hpp"

namespace microddp::labs {

namespace {
constexpr std::size_t kCallsPerGradient = 4;  // calls logged for the grader: room for a few wrong ones
}  // namespace

void GradSyncContext::all_reduce_sum(float* data, std::int64_t count) { owner_.all_reduce_sum(data, count); }

LabSync::LabSync(comm::Communicator& comm, const std::vector<model::ParamInfo>& params, core::TensorView grads,
                 core::EventLog& events)
    : GradSync(comm, params, grads, events), ctx_(*this) {
  MDDP_USAGE_CHECK(grads.device == core::Device::Host,
                   "--strategy lab (lab 04) runs on host gradients: use --device cpu");
  synced_count_ = 0;  // like naive: one all-reduce per parameter, the padding is not sent
  auto* base = static_cast<float*>(grads.data);
  for (const auto& p : params) {
    ctx_.grads_.push_back(LabGrad{p.name, base + p.offset, p.count});
    synced_count_ += p.count;
  }
  ctx_.rank_ = comm.rank();
  ctx_.world_size_ = comm.size();
  ctx_.calls_.reserve(kCallsPerGradient * params.size() + kCallsPerGradient);  // no allocation per step
}

std::vector<ddp::SyncUnit> LabSync::units() const {
  std::vector<ddp::SyncUnit> u;
  for (const auto& p : params_) u.push_back({p.offset, p.count, p.index, p.index + 1});
  return u;
}

void LabSync::all_reduce_sum(float* data, std::int64_t count) {
  const auto* base = static_cast<const float*>(grads_.data);
  MDDP_USAGE_CHECK(count >= 0 && data >= base && data + count <= base + grads_.count,
                   "lab 04: all_reduce_sum(" << static_cast<const void*>(data) << ", " << count
                                             << ") is not inside the gradients (ctx.grads())");
  // The event id: the gradient this call starts at (the label traces show), else -1.
  std::int32_t id = -1;
  for (std::size_t i = 0; i < ctx_.grads_.size(); ++i) {
    if (ctx_.grads_[i].data == data) id = static_cast<std::int32_t>(i);
  }
  if (ctx_.calls_.size() < ctx_.calls_.capacity()) ctx_.calls_.push_back({data, count});
  ++ctx_.calls_made_;
  const std::int64_t t0 = core::now_ns();
  comm_.all_reduce(core::TensorView::of(data, count), comm::ReduceOp::Sum, comm::Mode::Sync);
  record_collective(id, t0, 0, core::now_ns(), count * model::kParamElementBytes);  // synchronous: started at t0
}

void LabSync::finish() {
  check_all_ready();
  ctx_.calls_.clear();
  ctx_.calls_made_ = 0;
  const std::int64_t wait_begin = core::now_ns();
  naive_data_parallel_sync(ctx_);
  events_.record(core::EventKind::CommWait, step_, -1, wait_begin, core::now_ns());
}

ddp::Strategy LabSync::strategy() const { return lab_strategies().naive_dp; }

}  // namespace microddp::labs
