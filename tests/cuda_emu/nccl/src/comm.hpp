// comm.hpp — one emulated NCCL communicator: its rank, the TCP connection to every peer, the order in
// which its operations execute, and its error / abort state.
//
// Contract:
//   * Issue side (the host thread calling NCCL): take_ticket() numbers operations in issue order;
//     sequence numbers for the wire (wire.hpp) are taken at the same time. NCCL communicators are not
//     thread-safe, and neither is this side.
//   * Execution side (stream worker threads): run_in_order(ticket, body) runs body only after every
//     earlier ticket of this communicator has run, whichever streams they were issued to, so each rank
//     puts its messages on the sockets in issue order. One body runs at a time per communicator.
//   * Errors: the first failing body's Status becomes the asynchronous error (async_error()); it shuts
//     every connection down so that peers blocked on this rank fail too instead of waiting forever,
//     and every later operation is skipped without touching its buffers (the communicator must be
//     aborted, as with NCCL). The failed operation and every later one hold their streams until
//     abort(): NCCL's kernels keep waiting for data that never comes, so a stream with a failed
//     collective does not complete on a GPU either (only polling async_error() and aborting helps).
//   * abort(): sets the abort flag, shuts the connections down (a running body sees its sockets fail
//     or the flag within kPollSliceMs and returns), waits for the running body only — operations still
//     queued behind other stream work skip themselves when they run — then closes the sockets.
//   * destroy(): waits until every issued operation has run or been skipped, then closes the sockets.
//     Operations waiting for a peer that never comes, or held by a failure, block it, as
//     ncclCommDestroy would; use abort().
//   * The object outlives both: queued stream work holds a shared_ptr to it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "peer_info.hpp"
#include "socket.hpp"
#include "status.hpp"

namespace cuda_emu::nccl {

class Comm {
 public:
  // `sockets[q]` is connected to rank q (invalid for q == rank); `peers` as received at bootstrap.
  Comm(int rank, int nranks, int device, std::vector<PeerInfo> peers, std::vector<Fd> sockets);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  int device() const { return device_; }
  int socket(int peer) const { return sockets_[static_cast<std::size_t>(peer)].get(); }
  const PeerInfo& peer(int r) const { return peers_[static_cast<std::size_t>(r)]; }

  // ---- issue side ----
  std::uint64_t take_ticket();
  std::uint64_t next_collective_seq() { return collective_seq_++; }
  std::uint64_t next_send_seq(int peer) { return send_seq_[static_cast<std::size_t>(peer)]++; }
  std::uint64_t next_recv_seq(int peer) { return recv_seq_[static_cast<std::size_t>(peer)]++; }

  // ---- execution side ----
  void run_in_order(std::uint64_t ticket, const std::function<Status()>& body);
  // For a ticket whose work could not be enqueued: the communicator fails with `why`, nothing waits for it.
  void abandon(std::uint64_t ticket, const Status& why);
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // Grow-only scratch for the running operation (one runs at a time).
  std::byte* scratch(std::size_t bytes);

  // ---- state ----
  Status async_error() const;  // ncclSuccess while healthy
  void abort();
  void destroy();

 private:
  void record_failure(const Status& st);  // holds m_
  void shutdown_sockets();                // holds m_ or no body can run
  void close_sockets();

  const int rank_, nranks_, device_;
  const std::vector<PeerInfo> peers_;
  std::vector<Fd> sockets_;

  std::uint64_t collective_seq_ = 0;
  std::vector<std::uint64_t> send_seq_, recv_seq_;

  mutable std::mutex m_;
  std::condition_variable cv_;
  std::uint64_t next_ticket_ = 0;  // issue side
  std::uint64_t next_to_run_ = 0;  // the ticket whose turn it is
  std::uint64_t pending_ = 0;      // issued, not yet run or skipped
  bool running_ = false;           // a body is executing
  bool closed_ = false;
  Status error_;  // first failure
  std::atomic<bool> aborted_{false};
  std::vector<std::byte> scratch_;
};

}  // namespace cuda_emu::nccl
