// socket.cpp — TCP plumbing with deadlines (socket.hpp).
#include "socket.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include <algorithm>

namespace cuda_emu::nccl {

namespace {

// Pause between connection attempts to an endpoint that refuses (its listener is not up yet).
constexpr auto kConnectRetryPause = std::chrono::milliseconds(20);

bool peer_side(int err) { return err == ECONNRESET || err == EPIPE || err == ECONNABORTED; }

sockaddr_in to_sockaddr(const Endpoint& e) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = e.ip;
  a.sin_port = htons(e.port);
  return a;
}

// Waits until `fd` is ready for `events`; false when the deadline passed first.
Status wait_ready(int fd, short events, Deadline deadline, const std::string& what, bool& ready) {
  ready = false;
  for (;;) {
    if (Clock::now() >= deadline) return success();
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, poll_slice_ms(deadline));
    if (rc < 0) {
      if (errno == EINTR) continue;
      return socket_error(errno, what + ": poll");
    }
    if (rc > 0) {
      ready = true;
      return success();
    }
  }
}

}  // namespace

int poll_slice_ms(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left + 1, 0, kPollSliceMs));
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string Endpoint::str() const {
  char buf[INET_ADDRSTRLEN] = {};
  in_addr a{};
  a.s_addr = ip;
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return cat(buf, ":", port);
}

Status socket_error(int err, const std::string& what) {
  return fail(peer_side(err) ? ncclRemoteError : ncclSystemError, cat(what, ": ", std::strerror(err)));
}

void set_no_delay(int fd) {
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Status listen_on(std::uint32_t ip, int backlog, Fd& out, Endpoint& bound) {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s.valid()) return socket_error(errno, "socket()");
  Endpoint want{ip, 0};
  sockaddr_in a = to_sockaddr(want);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    return socket_error(errno, cat("bind(", want.str(), ")"));
  }
  if (::listen(s.get(), backlog) != 0) return socket_error(errno, "listen()");
  socklen_t len = sizeof a;
  if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) return socket_error(errno, "getsockname()");
  bound = Endpoint{a.sin_addr.s_addr, ntohs(a.sin_port)};
  out = std::move(s);
  return success();
}

Status connect_to(const Endpoint& to, Deadline deadline, Fd& out, const std::string& what) {
  const sockaddr_in a = to_sockaddr(to);
  int last_err = ETIMEDOUT;
  while (Clock::now() < deadline) {
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!s.valid()) return socket_error(errno, what + ": socket()");
    int err = 0;
    if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        bool ready = false;
        if (Status st = wait_ready(s.get(), POLLOUT, deadline, what, ready); !st.ok()) return st;
        if (!ready) break;
        socklen_t len = sizeof err;
        if (::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      set_no_delay(s.get());
      out = std::move(s);
      return success();
    }
    last_err = err;
    // Refused / unreachable: the listener may not be up yet (or a route is being set up); retry.
    if (err != ECONNREFUSED && err != ENETUNREACH && err != EHOSTUNREACH && err != ETIMEDOUT && err != EINTR) {
      return socket_error(err, cat(what, ": connect to ", to.str()));
    }
    std::this_thread::sleep_for(kConnectRetryPause);
  }
  return fail(ncclSystemError, cat(what, ": could not connect to ", to.str(),
                                   " before the bootstrap timeout (last error: ", std::strerror(last_err), ")"));
}

Status accept_one(int listen_fd, Deadline deadline, Fd& out, const std::string& what) {
  for (;;) {
    Fd s(::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (s.valid()) {
      set_no_delay(s.get());
      out = std::move(s);
      return success();
    }
    const int err = errno;
    if (err == EINTR || err == ECONNABORTED) continue;
    if (err != EAGAIN && err != EWOULDBLOCK) return socket_error(err, what + ": accept()");
    bool ready = false;
    if (Status st = wait_ready(listen_fd, POLLIN, deadline, what, ready); !st.ok()) return st;
    if (!ready) return fail(ncclSystemError, what + ": timed out waiting for a connection");
  }
}

Status write_exact(int fd, const void* data, std::size_t bytes, Deadline deadline, const std::string& what) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      bytes -= static_cast<std::size_t>(n);
      continue;
    }
    const int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && err != EAGAIN && err != EWOULDBLOCK) return socket_error(err, what);
    bool ready = false;
    if (Status st = wait_ready(fd, POLLOUT, deadline, what, ready); !st.ok()) return st;
    if (!ready) return fail(ncclSystemError, what + ": timed out");
  }
  return success();
}

Status read_exact(int fd, void* data, std::size_t bytes, Deadline deadline, const std::string& what) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n > 0) {
      p += n;
      bytes -= static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return fail(ncclRemoteError, what + ": connection closed by the other side");
    const int err = errno;
    if (err == EINTR) continue;
    if (err != EAGAIN && err != EWOULDBLOCK) return socket_error(err, what);
    bool ready = false;
    if (Status st = wait_ready(fd, POLLIN, deadline, what, ready); !st.ok()) return st;
    if (!ready) return fail(ncclSystemError, what + ": timed out");
  }
  return success();
}

}  // namespace cuda_emu::nccl
