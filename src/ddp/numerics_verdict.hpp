// numerics_verdict.hpp — the step's loss and numerics verdict, agreed by all ranks in ONE small
// all-reduce, and the NaN policy applied to it (docs/reliability.md; the guards themselves are
// ddp/numerics.hpp).
//
// Per step: each micro-step's backward writes its loss share to micro_loss(k); the optimizer update
// writes the synchronised gradient's sum of squares to sum_squares(); reduce() then computes, on the
// device, the step's verdict (kernels::StepVerdict: loss, loss non-finite, gradient non-finite) twice
// (one copy for the all-reduce, one this rank's own), all-reduces the first copy (sum: the global
// loss and the number of ranks that saw each problem), brings everything to pinned host memory with one asynchronous copy and waits
// once: the step's one host synchronisation on a GPU. On a stream-ordered communicator (NCCL) the
// all-reduce is queued on the device and the compute stream waits for it, not the host; the host's
// wait for the stream then polls through the communicator (Communicator::wait_for_stream: a hung or
// dead peer ends in the collective timeout with an abort, never in a blocked cudaStreamSynchronize).
// A local check alone could differ between ranks (a NaN in one rank's copy only); the all-reduced
// counts cannot, so every rank applies the NaN policy at the same step: enforce() throws
// core::AgreedError on every rank (abort) or counts a skipped step (skip: the trainer makes no
// update, so parameters and optimizer state, moments and step count, stay as they were, and the
// next step takes the next batch).
// Contract: reduce() allocates nothing; enforce() (rare) gathers the per-rank flags to name ranks.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "comm/communicator.hpp"
#include "core/host_buffer.hpp"
#include "ddp/numerics.hpp"
#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"

namespace microddp::ddp {

class NumericsVerdict {
 public:
  NumericsVerdict(comm::Communicator& comm, kernels::Ops& ops, std::int64_t micro_steps, NanPolicy policy);

  // Device float where micro-step k's loss share goes; device double for the gradient's sum of squares.
  float* micro_loss(std::int64_t k) { return micro_losses_.data() + k; }
  double* sum_squares() { return &numerics_.data()->grad_sum_squares; }
  // The verdict of the step's `micro_steps` micro-steps (collective; the step's host synchronisation).
  void reduce(std::int64_t micro_steps) {
    queue_reduce(micro_steps);
    wait_reduce();
  }
  // reduce() in its two halves, for a step captured into a CUDA graph (ddp/step_graph.hpp):
  // queue_reduce() only queues work (the numerics, the all-reduce on a stream-ordered communicator,
  // the copy to pinned host memory), so it can be captured; wait_reduce() synchronises and makes the
  // result readable. A replayed graph runs the queued half again; wait_reduce() follows each replay.
  void queue_reduce(std::int64_t micro_steps);
  void wait_reduce();

  // The last reduce()'s result, the same on every rank.
  double loss() const { return host_numerics_[0].agreed.loss; }  // global mean loss of the step's global batch
  bool nonfinite() const {
    return host_numerics_[0].agreed.loss_nonfinite != 0.0 || host_numerics_[0].agreed.grad_nonfinite != 0.0;
  }
  double grad_norm() const { return std::sqrt(host_numerics_[0].grad_sum_squares); }  // of the synchronised gradient
  // The same numbers on the device, valid in stream order after queue_reduce(): what a step replayed
  // from a CUDA graph decides its update from.
  const kernels::StepNumerics* device_numerics() const { return numerics_.data(); }

  // A non-finite step (every rank calls it at the same step, 0-based `step`): names the ranks that
  // saw a non-finite loss / gradient; abort: throws core::AgreedError; skip: warns on rank 0 and
  // counts. `gradient_hint`, when not empty, is added in parentheses when a gradient was non-finite
  // (what the gradient's wire format can tell about it: GradCompressor::nonfinite_hint()).
  void enforce(std::int64_t step, std::string_view gradient_hint);
  std::int64_t skipped_steps() const { return skipped_steps_; }

 private:
  comm::Communicator& comm_;
  kernels::Ops& ops_;
  NanPolicy policy_;
  // Device memory: each micro-step's loss share, and the step's numerics (one kernels::StepNumerics:
  // the verdict all-reduced once per step, the gradient's sum of squares, this rank's own verdict).
  // host_numerics_ is its pinned host copy.
  kernels::OpsBuffer<float> micro_losses_;
  kernels::OpsBuffer<kernels::StepNumerics> numerics_;
  kernels::OpsHostBuffer<kernels::StepNumerics> host_numerics_;
  comm::Work pending_;  // the stream-ordered all-reduce queued by queue_reduce(), waited by wait_reduce()
  core::HostBuffer<std::int64_t> nonfinite_all_;  // (ranks, 2) local flags, gathered only on a non-finite step
  std::int64_t skipped_steps_ = 0;
};

}  // namespace microddp::ddp
