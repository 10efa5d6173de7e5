// divergence_check.cpp — state hashes, the one all-reduce, and the report on a difference.
#include "ddp/divergence_check.hpp"

#include <algorithm>
#include <sstream>

#include "core/error.hpp"
#include "core/hash.hpp"

namespace microddp::ddp {

DivergenceCheck::DivergenceCheck(comm::Communicator& comm, const std::vector<model::ParamInfo>& infos,
                                 const float* params, const std::vector<model::Optimizer::StateBuffer>& state)
    : comm_(comm) {
  std::vector<const model::ParamInfo*> by_layer;
  for (const auto& p : infos) by_layer.push_back(&p);
  std::sort(by_layer.begin(), by_layer.end(), [](const model::ParamInfo* a, const model::ParamInfo* b) {
    return a->layer != b->layer ? a->layer < b->layer : (!a->is_bias && b->is_bias);
  });
  for (const auto* p : by_layer) {
    entries_.push_back({p->name, params + p->offset, static_cast<std::size_t>(p->count) * sizeof(float)});
  }
  for (const auto& buf : state) {
    for (const auto* p : by_layer) {
      entries_.push_back(
          {p->name + ":" + buf.name, buf.data + p->offset, static_cast<std::size_t>(p->count) * sizeof(float)});
    }
  }
  entries_.push_back({"optimizer.steps", nullptr, sizeof(std::int64_t)});
  hashes_ = core::HostBuffer<std::int64_t>(static_cast<std::int64_t>(2 * entries_.size()));
}

void DivergenceCheck::fill_hashes(std::int64_t optimizer_steps) {
  const std::size_t n = entries_.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& e = entries_[i];
    const auto h =
        static_cast<std::int64_t>(core::state_hash64(e.data != nullptr ? e.data : &optimizer_steps, e.bytes));
    hashes_[i] = h;
    hashes_[n + i] = ~h;  // ~ reverses the order of signed integers: max(~h) = ~min(h)
  }
}

void DivergenceCheck::verify(const char* when, std::int64_t step, std::int64_t optimizer_steps) {
  fill_hashes(optimizer_steps);
  const std::size_t n = entries_.size();
  comm_.all_reduce(core::TensorView::of(hashes_.data(), static_cast<std::int64_t>(2 * n)), comm::ReduceOp::Max);
  std::size_t first = n, differing = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (hashes_[i] != ~hashes_[n + i]) {
      if (first == n) first = i;
      ++differing;
    }
  }
  if (differing == 0) return;
  // Rare path (allocates): gather every rank's hashes to name the ranks that disagree with rank 0.
  fill_hashes(optimizer_steps);  // the all-reduce overwrote them
  const auto ranks = static_cast<std::size_t>(comm_.size());
  std::vector<std::int64_t> all(n * ranks);
  comm_.all_gather(core::TensorView::of(hashes_.data(), static_cast<std::int64_t>(n)),
                   core::TensorView::of(all.data(), static_cast<std::int64_t>(n * ranks)));
  std::ostringstream who;
  int count = 0;
  for (std::size_t r = 1; r < ranks; ++r) {
    if (all[r * n + first] != all[first]) who << (count++ ? ", " : "") << r;
  }
  std::ostringstream msg;
  msg << "ranks diverged " << when;
  if (step >= 0) msg << " " << step;
  msg << ": " << entries_[first].name << " differs on rank(s) " << who.str() << " from rank 0";
  if (differing > 1) msg << " (" << differing << " of " << n << " tensors differ)";
  throw core::AgreedError(msg.str());
}

}  // namespace microddp::ddp
