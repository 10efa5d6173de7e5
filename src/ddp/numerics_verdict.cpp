// numerics_verdict.cpp — the one all-reduce of [loss, verdict], and the NaN policy.
#include "ddp/numerics_verdict.hpp"

#include <sstream>
#include <utility>

#include "core/error.hpp"
#include "core/log.hpp"

namespace microddp::ddp {

NumericsVerdict::NumericsVerdict(comm::Communicator& comm, kernels::Ops& ops, std::int64_t micro_steps,
                                 NanPolicy policy)
    : comm_(comm),
      ops_(ops),
      policy_(policy),
      micro_losses_(ops, micro_steps),
      numerics_(ops, 7),
      host_numerics_(ops, 7),
      nonfinite_all_(2 * static_cast<std::size_t>(comm.size())) {}

void NumericsVerdict::queue_reduce(std::int64_t micro_steps) {
  double* num = numerics_.data();
  ops_.step_numerics(micro_losses_.data(), micro_steps, num + 3, num);      // all-reduced below
  ops_.step_numerics(micro_losses_.data(), micro_steps, num + 3, num + 4);  // this rank's own
  const core::TensorView verdict = core::TensorView::of(num, 3, ops_.device());
  if (comm_.completes_in_stream_order() && ops_.device() != core::Device::Host) {
    pending_ = comm_.all_reduce(verdict, comm::ReduceOp::Sum, comm::Mode::Async);
    comm_.order_compute_after(pending_);
  } else {
    comm_.all_reduce(verdict, comm::ReduceOp::Sum);
  }
  ops_.copy_to_host_async(host_numerics_.data(), num, 7 * sizeof(double));
}

void NumericsVerdict::wait_reduce() {
  // On a stream-ordered communicator the compute stream waits for the step's collectives (or replays
  // them in the step's graph): the host watches them while it waits (their asynchronous error, the
  // --comm-timeout), since a collective whose peer died or hangs never completes on a GPU. Then the
  // synchronisation below finds the stream idle.
  if (comm_.completes_in_stream_order() && ops_.device() != core::Device::Host)
    comm_.wait_for_stream(ops_.native_stream());
  ops_.synchronize();  // the step's one host synchronisation (reports device-flagged bad labels)
  const comm::Work w = std::exchange(pending_, comm::Work());
  w.wait();  // complete already: surfaces a communicator error
}

void NumericsVerdict::enforce(std::int64_t step, std::string_view gradient_hint) {
  // Rare path (allocates): name the ranks that saw a non-finite loss / gradient. Every rank comes
  // here at the same step (the verdict was all-reduced) and gathers the same flags.
  std::int64_t mine[2] = {host_numerics_[5] != 0.0 ? 1 : 0, host_numerics_[6] != 0.0 ? 1 : 0};
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
