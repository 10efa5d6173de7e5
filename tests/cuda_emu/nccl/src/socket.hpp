// socket.hpp — the TCP plumbing of the emulated NCCL: an owning file descriptor, IPv4 endpoints, and
// connect / listen / accept / exact-size read and write with deadlines.
//
// Contract:
//   * Every socket is created non-blocking and close-on-exec; waiting is always poll() with a deadline
//     (re-checked at least every kPollSliceMs), so no call here can hang past it.
//   * Writes use MSG_NOSIGNAL: a peer that went away is an error code (EPIPE), never SIGPIPE.
//   * Failures are Status values: ncclSystemError for local failures and timeouts, ncclRemoteError when
//     the other end closed or reset the connection.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "status.hpp"

namespace cuda_emu::nccl {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// How often blocking loops re-check abort flags and deadlines when nothing else wakes them (ms).
inline constexpr int kPollSliceMs = 100;

// Milliseconds from now to `deadline`, clamped to [0, kPollSliceMs].
int poll_slice_ms(Deadline deadline);

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();

 private:
  int fd_ = -1;
};

// An IPv4 endpoint; `ip` in network byte order, `port` in host byte order.
struct Endpoint {
  std::uint32_t ip = 0;
  std::uint16_t port = 0;
  std::string str() const;  // "a.b.c.d:port"
};

// A listening socket on `ip`, port chosen by the kernel; `bound` gets the actual endpoint.
Status listen_on(std::uint32_t ip, int backlog, Fd& out, Endpoint& bound);
// Connects to `to`, retrying refused or unreachable attempts until `deadline`.
Status connect_to(const Endpoint& to, Deadline deadline, Fd& out, const std::string& what);
// Accepts one connection; ncclSystemError when `deadline` passes first.
Status accept_one(int listen_fd, Deadline deadline, Fd& out, const std::string& what);
// Exactly `bytes` bytes, or an error (EOF / reset: ncclRemoteError).
Status write_exact(int fd, const void* data, std::size_t bytes, Deadline deadline, const std::string& what);
Status read_exact(int fd, void* data, std::size_t bytes, Deadline deadline, const std::string& what);

void set_no_delay(int fd);

// Status for a failed socket call: errno `err` during `what`; peer-side failures are ncclRemoteError.
Status socket_error(int err, const std::string& what);

}  // namespace cuda_emu::nccl
