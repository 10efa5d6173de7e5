// numerics_verdict.cpp — the one all-reduce of [loss, verdict], and the NaN policy.
#include "ddp/numerics_verdict.hpp"

#include <sstream>
#include <utility>

#include "core/error.hpp"
#include "core/log.hpp"
#include "ddp/stream_order.hpp"

namespace microddp::ddp {

NumericsVerdict::NumericsVerdict(comm::Communicator& comm, kernels::Ops& ops, std::int64_t micro_steps,
                                 NanPolicy policy)
    : comm_(comm),
      ops_(ops),
      policy_(policy),
      micro_losses_(ops, micro_steps),
      numerics_(ops, 1),
      host_numerics_(ops, 1),
      nonfinite_all_(2 * static_cast<std::size_t>(comm.size())) {}

void NumericsVerdict::queue_reduce(std::int64_t micro_steps) {
  kernels::StepNumerics* num = numerics_.data();
  ops_.step_numerics(micro_losses_.data(), micro_steps, &num->grad_sum_squares, &num->agreed);  // all-reduced below
  ops_.step_numerics(micro_losses_.data(), micro_steps, &num->grad_sum_squares, &num->own);
  const core::TensorView verdict = core::TensorView::of(kernels::agreed_doubles(num), 3, ops_.device());
  if (completes_in_stream_order(comm_, ops_.device())) {
    pending_ = comm_.all_reduce(verdict, comm::ReduceOp::Sum, comm::Mode::Async);
    comm_.order_compute_after(pending_);
  } else {
    comm_.all_reduce(verdict, comm::ReduceOp::Sum);
  }
  ops_.copy_to_host_async(host_numerics_.data(), num, sizeof(kernels::StepNumerics));
}

void NumericsVerdict::wait_reduce() {
  // On a stream-ordered communicator the compute stream waits for the step's collectives (or replays
  // them in the step's graph): the host watches them while it waits, then the synchronisation below
  // finds the stream idle.
  watch_collectives_until_stream_idle(comm_, ops_);
  ops_.synchronize();  // the step's one host synchronisation (reports device-flagged bad labels)
  const comm::Work w = std::exchange(pending_, comm::Work());
  w.wait();  // complete already: surfaces a communicator error
}

void NumericsVerdict::enforce(std::int64_t step, std::string_view gradient_hint) {
  // Rare path (allocates): name the ranks that saw a non-finite loss / gradient. Every rank comes
  // here at the same step (the verdict was all-reduced) and gathers the same flags.
  const kernels::StepVerdict& own = host_numerics_[0].own;
  std::int64_t mine[2] = {own.loss_nonfinite != 0.0 ? 1 : 0, own.grad_nonfinite != 0.0 ? 1 : 0};
  comm_.all_gather(core::TensorView::of(mine, 2), core::TensorView::of(nonfinite_all_.data(), 2 * comm_.size()));
  std::ostringstream loss_ranks, grad_ranks;
  int nl = 0, ng = 0;
  for (int r = 0; r < comm_.size(); ++r) {
    if (nonfinite_all_[2 * static_cast<std::size_t>(r)] != 0) loss_ranks << (nl++ ? ", " : "") << r;
    if (nonfinite_all_[2 * static_cast<std::size_t>(r) + 1] != 0) grad_ranks << (ng++ ? ", " : "") << r;
  }
  std::ostringstream msg;
  msg << "non-finite values at step " << step + 1 << ": loss non-finite on rank(s) " << (nl ? loss_ranks.str() : "none")
      << "; synchronised gradient non-finite on rank(s) " << (ng ? grad_ranks.str() : "none");
  if (ng > 0 && !gradient_hint.empty()) msg << " (" << gradient_hint << ")";
  if (policy_ == NanPolicy::Skip) {
    ++skipped_steps_;
    msg << "; update skipped (--on-nan skip; " << skipped_steps_ << " skipped so far)";
    if (comm_.rank() == 0) MDDP_WARN(msg.str());
    return;
  }
  msg << " (--on-nan abort; --on-nan skip would skip such steps)";
  throw core::AgreedError(msg.str());
}

}  // namespace microddp::ddp
