// launch.hpp — from recorded calls to stream work: one fused operation per communicator per launch
// (a single call, or a communicator's share of a group).
//
// Contract:
//   * check_launchable() is the part of validation that needs the whole operation: every ncclSend to
//     self pairs, in order, with an ncclRecv from self of the same count and type (NCCL requires them
//     in one group). ncclGroupEnd checks every communicator before it launches any.
//   * launch() numbers the operation (ticket, wire sequence numbers) and enqueues it with
//     cuda_emu::enqueue; the host returns at once. If the calls use several streams, the operation runs
//     on the first one after every other one has reached it, and those streams continue only after it
//     (as NCCL joins the streams of a group).
//   * Streams that capture a CUDA graph (cuda_emu::capture_operation) get one graph node instead; each
//     launch of the graph numbers it anew, in launch order, so every replay is a new operation of the
//     communicator, and a communicator's nodes run in capture order. A mix of capturing and other
//     streams is refused (ncclUnhandledCudaError, the capture invalidated).
#pragma once

#include <memory>
#include <vector>

#include "comm.hpp"
#include "operation.hpp"
#include "status.hpp"

namespace cuda_emu::nccl {

Status check_launchable(const Comm& comm, const std::vector<Call>& calls);
Status launch(const std::shared_ptr<Comm>& comm, std::vector<Call> calls);

}  // namespace cuda_emu::nccl
