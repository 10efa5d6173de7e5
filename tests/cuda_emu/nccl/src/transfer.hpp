// transfer.hpp — one step of an operation: a set of messages to send and to receive, all progressed
// concurrently over the communicator's non-blocking sockets with poll().
//
// Contract of run_step(comm, sends, recvs):
//   * Messages to one peer leave in list order, messages from one peer are matched in list order; the
//     peers of a step progress independently, so a step never deadlocks against a matching step on its
//     peers whatever the message sizes (a ring exchange, an all-to-all).
//   * A receive reads the header first and checks it (wire.hpp) before any payload byte lands in user
//     memory; the payload is then read straight into `data`.
//   * Messages to self (peer == comm.rank()) are matched in order with receives from self and copied.
//   * Returns when every message is done, on the first error, or on abort. Errors: a desynchronised
//     peer is ncclInvalidUsage; a peer that closed or reset its connection, ncclRemoteError; a local
//     socket failure, ncclSystemError. On an error it first tries, briefly, to finish writing the
//     header of each message in flight, so peers learn what this rank was doing (their mismatch message
//     then names both sides) rather than only seeing the connection end.
//   * Blocks as long as peers do not send (like a GPU kernel waiting for data); only abort ends that.
#pragma once

#include <cstddef>
#include <vector>

#include "comm.hpp"
#include "status.hpp"
#include "wire.hpp"

namespace cuda_emu::nccl {

struct SendMessage {
  int peer;
  Header header;  // payload_bytes == bytes
  const void* data;
  std::size_t bytes;
};

struct RecvMessage {
  int peer;
  Header expect;  // the header the peer must send
  void* data;
  std::size_t bytes;
};

Status run_step(Comm& comm, const std::vector<SendMessage>& sends, const std::vector<RecvMessage>& recvs);

}  // namespace cuda_emu::nccl
