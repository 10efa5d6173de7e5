// operation.hpp — an NCCL call as recorded by the API layer, and the execution of a fused operation
// (one call, or everything one communicator got between ncclGroupStart and ncclGroupEnd).
//
// Contract of execute(comm, calls), run on a stream worker inside Comm::run_in_order:
//   * Collectives run one after the other in call order; then every ncclSend/ncclRecv of the operation
//     runs as one step (transfer.hpp), so the sends and receives of a group progress concurrently.
//     Every rank must therefore group collectives and point-to-point calls alike (collectives first is
//     the order on the wire whatever order the group listed them in).
//   * Algorithms (all bitwise identical on every rank, reductions in rank order 0..n-1):
//       all-reduce      blocks of count/n (the first count%n one element longer); rank q reduces block q
//                       from every rank's contribution in rank order, then sends it to everyone;
//       reduce          the same reduction (so its result equals all-reduce's bit for bit), then the
//                       owners send their block to the root only;
//       reduce-scatter  rank q reduces block q (recvcount elements) in rank order;
//       all-gather      every rank sends its block to every rank;
//       broadcast       the root sends the buffer to every rank.
//     The first step of every collective carries a message between every ordered pair of ranks
//     (zero-length where the algorithm has nothing to say), so every rank checks every other rank's
//     header: a desynchronised collective is detected on all ranks.
//   * In-place forms as NCCL documents them: sendbuff == recvbuff (all-reduce, broadcast, reduce),
//     recvbuff == sendbuff + rank * recvcount (reduce-scatter), sendbuff == recvbuff + rank * sendcount
//     (all-gather). One rank is a copy (no reduction arithmetic).
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm.hpp"
#include "status.hpp"

namespace cuda_emu::nccl {

enum class CallType { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, Send, Recv };

struct Call {
  CallType type = CallType::AllReduce;
  const void* send = nullptr;  // sendbuff (Send: the data)
  void* recv = nullptr;        // recvbuff (Recv: the destination)
  std::size_t count = 0;       // the count argument as the user gave it
  ncclDataType_t dtype = ncclInt8;
  ncclRedOp_t op = ncclSum;
  int root = -1;  // Broadcast, Reduce
  int peer = -1;  // Send, Recv
  cudaStream_t stream = nullptr;
  std::uint64_t seq = 0;  // wire sequence number, assigned at launch
};

const char* call_name(CallType type);  // "ncclAllReduce", ...
bool is_p2p(CallType type);

Status execute(Comm& comm, const std::vector<Call>& calls);

}  // namespace cuda_emu::nccl
