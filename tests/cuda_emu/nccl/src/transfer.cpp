// transfer.cpp — concurrent progress of one step's messages (transfer.hpp).
//
// Per peer there is one queue of messages to send and one of messages to receive, each with a byte
// offset into "header then payload". Every poll() round writes what the peer's socket accepts and reads
// what it has, for every peer with work left, so a peer that is slow to drain never holds up the others.
#include "transfer.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace cuda_emu::nccl {

namespace {

constexpr std::size_t kHeaderBytes = sizeof(Header);
// After an error, how long to keep trying to get in-flight headers out (peers then report a mismatch
// naming both sides rather than a bare closed connection). Short: it only delays an error path.
constexpr auto kHeaderFlushBudget = std::chrono::milliseconds(500);

struct PeerProgress {
  std::vector<const SendMessage*> sends;
  std::size_t send_next = 0;
  std::size_t send_off = 0;  // bytes of header + payload of sends[send_next] written
  std::vector<const RecvMessage*> recvs;
  std::size_t recv_next = 0;
  std::size_t recv_off = 0;  // bytes of header + payload of recvs[recv_next] read
  Header got{};
  bool sending() const { return send_next < sends.size(); }
  bool receiving() const { return recv_next < recvs.size(); }
};

Status peer_failed(const Comm& c, int peer, int err, const char* doing, const Header& h) {
  const bool closed = err == 0 || err == ECONNRESET || err == EPIPE || err == ECONNABORTED;
  const std::string reason = err == 0 ? "closed by the other side" : std::strerror(err);
  return fail(closed ? ncclRemoteError : ncclSystemError,
              cat("rank ", c.rank(), ": connection to ", describe_peer(c.peer(peer)), " failed (", reason, ") while ",
                  doing, " ", describe(h), closed ? ": that rank died, aborted its communicator, or failed" : ""));
}

Status progress_send(const Comm& c, int peer, PeerProgress& p) {
  const int fd = c.socket(peer);
  while (p.sending()) {
    const SendMessage& m = *p.sends[p.send_next];
    const std::size_t total = kHeaderBytes + m.bytes;
    iovec iov[2];
    int parts = 0;
    if (p.send_off < kHeaderBytes) {
      iov[parts++] = {reinterpret_cast<char*>(const_cast<Header*>(&m.header)) + p.send_off, kHeaderBytes - p.send_off};
      if (m.bytes > 0) iov[parts++] = {const_cast<void*>(m.data), m.bytes};
    } else {
      iov[parts++] = {static_cast<char*>(const_cast<void*>(m.data)) + (p.send_off - kHeaderBytes), total - p.send_off};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(parts);
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return success();
      return peer_failed(c, peer, errno, "sending", m.header);
    }
    p.send_off += static_cast<std::size_t>(n);
    if (p.send_off == total) {
      ++p.send_next;
      p.send_off = 0;
    }
  }
  return success();
}

Status progress_recv(const Comm& c, int peer, PeerProgress& p) {
  const int fd = c.socket(peer);
  while (p.receiving()) {
    const RecvMessage& m = *p.recvs[p.recv_next];
    void* into = nullptr;
    std::size_t want = 0;
    if (p.recv_off < kHeaderBytes) {
      into = reinterpret_cast<char*>(&p.got) + p.recv_off;
      want = kHeaderBytes - p.recv_off;
    } else if (p.recv_off - kHeaderBytes < m.bytes) {
      into = static_cast<char*>(m.data) + (p.recv_off - kHeaderBytes);
      want = m.bytes - (p.recv_off - kHeaderBytes);
    }
    if (want > 0) {
      const ssize_t n = ::recv(fd, into, want, 0);
      if (n == 0) return peer_failed(c, peer, 0, "receiving", m.expect);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return success();
        return peer_failed(c, peer, errno, "receiving", m.expect);
      }
      const bool header_was_incomplete = p.recv_off < kHeaderBytes;
      p.recv_off += static_cast<std::size_t>(n);
      if (header_was_incomplete && p.recv_off == kHeaderBytes) {
        // The whole header is here: check it before a single payload byte is read into user memory.
        if (std::string why = mismatch(m.expect, p.got, c.rank(), peer); !why.empty()) {
          return fail(ncclInvalidUsage, cat("rank ", c.rank(), ": ", why));
        }
      }
    }
    if (p.recv_off == kHeaderBytes + m.bytes) {
      ++p.recv_next;
      p.recv_off = 0;
    }
  }
  return success();
}

// Best effort, bounded: completes the header of the message in flight to every peer.
void flush_headers(const Comm& c, const std::vector<PeerProgress>& peers) {
  if (c.aborted()) return;
  const Deadline deadline = Clock::now() + kHeaderFlushBudget;
  for (std::size_t q = 0; q < peers.size(); ++q) {
    const PeerProgress& p = peers[q];
    if (!p.sending() || p.send_off >= kHeaderBytes) continue;
    const SendMessage& m = *p.sends[p.send_next];
    (void)write_exact(c.socket(static_cast<int>(q)), reinterpret_cast<const char*>(&m.header) + p.send_off,
                      kHeaderBytes - p.send_off, deadline, "header flush");
  }
}

}  // namespace

Status run_step(Comm& comm, const std::vector<SendMessage>& sends, const std::vector<RecvMessage>& recvs) {
  const int me = comm.rank();
  std::vector<PeerProgress> peers(static_cast<std::size_t>(comm.size()));
  std::vector<const SendMessage*> self_sends;
  std::vector<const RecvMessage*> self_recvs;
  for (const SendMessage& s : sends)
    (s.peer == me ? self_sends : peers[static_cast<std::size_t>(s.peer)].sends).push_back(&s);
  for (const RecvMessage& r : recvs)
    (r.peer == me ? self_recvs : peers[static_cast<std::size_t>(r.peer)].recvs).push_back(&r);

  // Messages to self: matched in order (the launch checked that they pair up), copied first.
  if (self_sends.size() != self_recvs.size()) {
    return fail(ncclInvalidUsage, cat("rank ", me, ": ", self_sends.size(), " send(s) to self but ", self_recvs.size(),
                                      " receive(s) from self in one operation"));
  }
  for (std::size_t i = 0; i < self_sends.size(); ++i) {
    if (std::string why = mismatch(self_recvs[i]->expect, self_sends[i]->header, me, me); !why.empty()) {
      return fail(ncclInvalidUsage, cat("rank ", me, ": ", why));
    }
    if (self_sends[i]->bytes > 0 && self_recvs[i]->data != self_sends[i]->data) {
      std::memmove(self_recvs[i]->data, self_sends[i]->data, self_sends[i]->bytes);
    }
  }

  std::vector<pollfd> fds;
  std::vector<int> fd_peer;
  for (;;) {
    if (comm.aborted()) return fail(ncclInvalidUsage, cat("rank ", me, ": communicator aborted"));
    fds.clear();
    fd_peer.clear();
    for (int q = 0; q < comm.size(); ++q) {
      const PeerProgress& p = peers[static_cast<std::size_t>(q)];
      const short events = static_cast<short>((p.sending() ? POLLOUT : 0) | (p.receiving() ? POLLIN : 0));
      if (events == 0) continue;
      fds.push_back({comm.socket(q), events, 0});
      fd_peer.push_back(q);
    }
    if (fds.empty()) return success();
    const int rc = ::poll(fds.data(), fds.size(), kPollSliceMs);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return fail(ncclSystemError, cat("rank ", me, ": poll(): ", std::strerror(errno)));
    }
    for (std::size_t i = 0; i < fds.size() && rc > 0; ++i) {
      const short ev = fds[i].revents;
      if (ev == 0) continue;
      PeerProgress& p = peers[static_cast<std::size_t>(fd_peer[i])];
      Status st;
      // Writes first: a rank that is about to fail on what it reads still gets its header out.
      if ((ev & (POLLOUT | POLLERR | POLLHUP)) != 0 && p.sending()) st = progress_send(comm, fd_peer[i], p);
      if (st.ok() && (ev & (POLLIN | POLLERR | POLLHUP)) != 0 && p.receiving()) st = progress_recv(comm, fd_peer[i], p);
      if (!st.ok()) {
        flush_headers(comm, peers);
        return st;
      }
    }
  }
}

}  // namespace cuda_emu::nccl
