// comm.cpp — communicator state, execution order, errors and teardown (comm.hpp).
#include "comm.hpp"

#include <sys/socket.h>

namespace cuda_emu::nccl {

Comm::Comm(int rank, int nranks, int device, std::vector<PeerInfo> peers, std::vector<Fd> sockets)
    : rank_(rank),
      nranks_(nranks),
      device_(device),
      peers_(std::move(peers)),
      sockets_(std::move(sockets)),
      send_seq_(static_cast<std::size_t>(nranks), 0),
      recv_seq_(static_cast<std::size_t>(nranks), 0) {}

Comm::~Comm() { close_sockets(); }

std::uint64_t Comm::take_ticket() {
  std::lock_guard lock(m_);
  ++pending_;
  return next_ticket_++;
}

void Comm::run_in_order(std::uint64_t ticket, const std::function<Status()>& body) {
  std::unique_lock lock(m_);
  // After a failure or an abort nothing runs any more, so there is no turn to wait for.
  cv_.wait(lock, [&] { return next_to_run_ == ticket || aborted() || !error_.ok(); });
  if (!aborted() && error_.ok() && !closed_) {
    running_ = true;
    lock.unlock();
    Status st = body();
    lock.lock();
    running_ = false;
    if (!st.ok() && !aborted()) record_failure(st);
  }
  // A failed communicator's operations hold their streams until ncclCommAbort, as NCCL's kernels
  // keep spinning for data that never comes: the error is visible at once (async_error()), but the
  // stream completes only after the abort, so a host blocked on it would hang as on a GPU.
  cv_.wait(lock, [&] { return aborted() || error_.ok(); });
  if (next_to_run_ == ticket) ++next_to_run_;
  --pending_;
  cv_.notify_all();
}

void Comm::abandon(std::uint64_t ticket, const Status& why) {
  std::lock_guard lock(m_);
  record_failure(why);
  if (next_to_run_ == ticket) ++next_to_run_;
  --pending_;
  cv_.notify_all();
}

void Comm::record_failure(const Status& st) {
  if (!error_.ok()) return;
  error_ = st;
  set_last_error(st.message);
  warn(st.message);
  // Peers blocked on this rank's messages now see the connection end and fail too.
  shutdown_sockets();
}

std::byte* Comm::scratch(std::size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

Status Comm::async_error() const {
  std::lock_guard lock(m_);
  return error_;
}

void Comm::shutdown_sockets() {
  for (Fd& s : sockets_) {
    if (s.valid()) (void)::shutdown(s.get(), SHUT_RDWR);
  }
}

void Comm::close_sockets() {
  for (Fd& s : sockets_) s.reset();
}

void Comm::abort() {
  std::unique_lock lock(m_);
  aborted_.store(true, std::memory_order_release);
  // shutdown() wakes a body blocked in poll() on these sockets; the fds stay valid until it has left.
  if (!closed_) shutdown_sockets();
  cv_.notify_all();
  cv_.wait(lock, [&] { return !running_; });
  closed_ = true;
  close_sockets();
}

void Comm::destroy() {
  std::unique_lock lock(m_);
  cv_.wait(lock, [&] { return pending_ == 0; });
  closed_ = true;
  close_sockets();
}

}  // namespace cuda_emu::nccl
