// lab_comm.hpp — all a lab's collective may use to talk to the other ranks (docs/labs): blocking
// point-to-point messages of floats, nothing else, so the algorithm is entirely the student's.
//
// It runs on a private duplicate of the given communicator (the lab's messages never match anyone
// else's) through the transport the production backends use (comm/transport/p2p_transport.hpp). Every call
// blocks until its buffer may be reused. It counts the floats this rank sent, which is how a
// grader tells a ring (2(n-1)/n of the buffer per rank) from everything-through-rank-0, the
// messages it sent (a barrier that sends nothing cannot work), and the floats it sent to each peer
// (what crossed between nodes, for lab 11's grader).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "comm/transport/p2p_transport.hpp"

namespace microddp::labs {

class LabComm {
 public:
  // Collective over `parent` (every rank of it must construct one).
  explicit LabComm(MPI_Comm parent);

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }

  // `count` floats to rank `to`; the receiver calls recv with the same count.
  void send(const float* data, std::int64_t count, int to);
  // `count` floats from rank `from` into `data`.
  void recv(float* data, std::int64_t count, int from);
  // Both at once: send to `to` while receiving from `from` (a ring step: every rank sends to its
  // right neighbour and receives from its left one; with a blocking send first, all would wait).
  void sendrecv(const float* send_data, std::int64_t send_count, int to, float* recv_data, std::int64_t recv_count,
                int from);

  // Floats this rank has sent since construction (graders compare before and after a call).
  std::int64_t floats_sent() const { return floats_sent_; }
  // Messages this rank has sent since construction, empty ones included (a barrier's messages carry
  // no floats: lab 07's grader counts them this way).
  std::int64_t messages_sent() const { return messages_sent_; }
  // Floats this rank has sent to rank `peer` since construction.
  std::int64_t floats_sent_to(int peer) const { return floats_sent_to_.at(static_cast<std::size_t>(peer)); }
  // Used by the lab backend: gives the messages of collective number `seq` their own tag, as the
  // production backends do, so two collectives can never exchange each other's messages.
  void begin(std::uint64_t seq) { transport_.begin(seq); }

 private:
  void check_peer(int peer, const char* what) const;
  comm::P2pTransport transport_;
  std::int64_t floats_sent_ = 0;
  std::int64_t messages_sent_ = 0;
  std::vector<std::int64_t> floats_sent_to_;  // [peer]
};

}  // namespace microddp::labs
