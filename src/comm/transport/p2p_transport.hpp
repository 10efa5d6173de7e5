// p2p_transport.hpp — the point-to-point machinery every hand-rolled backend (naive, ring, rd, auto)
// is built on: a private MPI_Comm_dup, non-blocking byte sends/receives with 64-bit sizes, request
// pools and one scratch buffer.
//
// Contract:
//   * All traffic runs on a private duplicate of the parent communicator (never matches a user's
//     messages) with MPI_ERRORS_RETURN; failures throw core::Error via MDDP_MPI_CHECK.
//   * isend()/irecv() move `bytes` bytes as ceil(bytes / max_message_bytes) messages (at least one,
//     so a 0-byte call is a real message: the dissemination barrier relies on it). Sender and receiver
//     must call with the same byte count; MPI's non-overtaking rule (same source, tag, communicator)
//     keeps the pieces in order. Every message of one collective carries the tag set by begin(seq),
//     so a message can never match a receive of a neighbouring collective.
//   * Algorithms never use MPI_ANY_SOURCE: each (sender, receiver) pair posts the same sequence of
//     messages on both sides, which is what makes the matching deterministic.
//   * scratch(bytes) returns a buffer of at least `bytes`, grown (never shrunk) only when a larger
//     request arrives. A training step repeats the same sizes, so after the first step the hand-rolled
//     backends allocate nothing (docs/design.md: the step allocates nothing). Request pools likewise.
//   * Not thread-safe: one collective at a time (the progress engine guarantees it).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace microddp::comm {

class P2pTransport {
 public:
  // Collective over `parent`. max_message_bytes: the largest single MPI message, in [1, INT_MAX]
  // (CommConfig::p2p_max_message_bytes: 1 GiB, lowered by tests to exercise the splitting with
  // small messages); equal on all ranks.
  P2pTransport(MPI_Comm parent, std::int64_t max_message_bytes);
  ~P2pTransport();
  P2pTransport(const P2pTransport&) = delete;
  P2pTransport& operator=(const P2pTransport&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Largest single MPI message in bytes.
  std::int64_t max_message_bytes() const { return max_message_bytes_; }

  // Starts a collective: sets the tag of all its messages from its sequence number.
  void begin(std::uint64_t seq);

  // Appends the requests of a (possibly multi-message) transfer to `reqs`.
  void isend(const void* buf, std::int64_t bytes, int peer, std::vector<MPI_Request>& reqs);
  void irecv(void* buf, std::int64_t bytes, int peer, std::vector<MPI_Request>& reqs);
  // One message of at most max_message_bytes; 0 bytes gives MPI_REQUEST_NULL and sends nothing (the
  // pipelined ring skips empty segments on both sides).
  MPI_Request isend_one(const void* buf, std::int64_t bytes, int peer);
  MPI_Request irecv_one(void* buf, std::int64_t bytes, int peer);

  static void wait(MPI_Request& req);
  static void wait_all(std::vector<MPI_Request>& reqs);  // waits, then clears (capacity kept)

  // Blocking exchange: send to `dst` and receive from `src` at the same time (no deadlock).
  void sendrecv(const void* sbuf, std::int64_t sbytes, int dst, void* rbuf, std::int64_t rbytes, int src);
  void send(const void* buf, std::int64_t bytes, int peer);
  void recv(void* buf, std::int64_t bytes, int peer);

  char* scratch(std::int64_t bytes);

  // Reusable request storage (capacity kept across collectives):
  //   pool(i, n): fixed slots, resized to at least n entries, all MPI_REQUEST_NULL (i < kPools);
  //   list(i):    append-only lists for isend()/irecv(), emptied by wait_all() (i < kLists).
  std::vector<MPI_Request>& pool(int i, std::int64_t n);
  std::vector<MPI_Request>& list(int i);
  // The most any algorithm uses at once: the pipelined ring's reduce phase keeps the receives and
  // the sends of two steps in flight (4 pools); naive double-buffers its receives (2 lists).
  static constexpr int kPools = 4;
  static constexpr int kLists = 2;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  int tag_ = 0;
  std::int64_t max_message_bytes_;
  std::vector<char> scratch_;
  std::vector<MPI_Request> pools_[kPools];
  std::vector<MPI_Request> lists_[kLists];
  std::vector<MPI_Request> internal_;  // sendrecv/send/recv
};

}  // namespace microddp::comm
