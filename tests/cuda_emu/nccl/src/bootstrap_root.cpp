// bootstrap_root.cpp — ncclGetUniqueId's side of the bootstrap (bootstrap.hpp): the root thread that
// collects every rank's Hello and answers with everyone's PeerInfo, or with an error naming the problem.
//
// The thread is detached and owns everything it touches (its listener, its connections), so it needs no
// joining and cannot outlive anything it uses; it ends when it has answered, or at its deadline.
// Connections are read without blocking (one poll() over all of them), so a stray client that connects
// and says nothing cannot hold up the real ranks.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "bootstrap.hpp"
#include "bootstrap_protocol.hpp"
#include "net_interface.hpp"
#include "unique_id.hpp"

namespace cuda_emu::nccl {

namespace {

// How long the root spends writing one reply before giving up on that rank (it then times out itself).
constexpr auto kReplyWriteLimit = std::chrono::seconds(10);
// Missing ranks listed by name in a timeout message; the rest are counted.
constexpr int kMissingRanksListed = 16;

struct Incoming {
  Fd fd;
  Hello hello;
  std::size_t got = 0;  // bytes of hello read
};

void send_reply(int fd, ncclResult_t status, const std::string& message, const std::vector<PeerInfo>* infos) {
  Reply r;
  r.status = static_cast<std::int32_t>(status);
  r.nranks = infos != nullptr ? static_cast<std::int32_t>(infos->size()) : 0;
  r.message_bytes = static_cast<std::uint32_t>(message.size());
  const Deadline deadline = Clock::now() + kReplyWriteLimit;
  if (!write_exact(fd, &r, sizeof r, deadline, "bootstrap root reply").ok()) return;
  if (infos != nullptr) {
    (void)write_exact(fd, infos->data(), infos->size() * sizeof(PeerInfo), deadline, "bootstrap root reply");
  } else {
    (void)write_exact(fd, message.data(), message.size(), deadline, "bootstrap root reply");
  }
}

std::string missing_ranks(const std::vector<Fd>& by_rank) {
  std::string s;
  int listed = 0, more = 0;
  for (std::size_t q = 0; q < by_rank.size(); ++q) {
    if (by_rank[q].valid()) continue;
    if (listed < kMissingRanksListed) {
      s += cat(listed == 0 ? "" : ", ", q);
      ++listed;
    } else {
      ++more;
    }
  }
  return more > 0 ? cat(s, " and ", more, " more") : s;
}

class Root {
 public:
  Root(Fd listener, std::uint64_t nonce, std::chrono::milliseconds timeout)
      : listener_(std::move(listener)), nonce_(nonce), timeout_(timeout), deadline_(Clock::now() + timeout) {}

  void run() {
    std::vector<pollfd> fds;
    for (;;) {
      if (nranks_ > 0 && joined_ == nranks_) return answer_all();
      if (Clock::now() >= deadline_) {
        if (joined_ > 0) {
          fail_all(ncclSystemError,
                   cat("bootstrap: only ", joined_, " of ", nranks_, " ranks called ncclCommInitRank within ",
                       std::chrono::duration<double>(timeout_).count(), " s of the first one; missing rank(s): ",
                       missing_ranks(by_rank_), " (NCCL_EMU_BOOTSTRAP_TIMEOUT_S)"));
        }
        return;
      }
      fds.assign(1, pollfd{listener_.get(), POLLIN, 0});
      for (const Incoming& in : incoming_) fds.push_back({in.fd.get(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), poll_slice_ms(deadline_)) < 0 && errno != EINTR) return;
      if ((fds[0].revents & POLLIN) != 0) accept_all();
      for (std::size_t i = incoming_.size(); i-- > 0;) {
        if (i + 1 >= fds.size() || fds[i + 1].revents == 0) continue;
        if (!read_hello(incoming_[i])) {
          incoming_.erase(incoming_.begin() + static_cast<std::ptrdiff_t>(i));  // closed, garbage, or complete
        }
        if (finished_) return;
      }
    }
  }

 private:
  void accept_all() {
    for (;;) {
      Fd s(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!s.valid()) return;
      incoming_.push_back(Incoming{std::move(s), Hello{}, 0});
    }
  }

  // False when the connection leaves `incoming_` (handed over to by_rank_, or dropped).
  bool read_hello(Incoming& in) {
    const ssize_t n = ::recv(in.fd.get(), reinterpret_cast<char*>(&in.hello) + in.got, sizeof(Hello) - in.got, 0);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (n == 0) return false;
    in.got += static_cast<std::size_t>(n);
    if (in.got < sizeof(Hello)) return true;
    const Hello& h = in.hello;
    if (h.magic != kBootstrapMagic || h.nonce != nonce_) {
      warn("bootstrap root: dropped a connection that does not belong to this communicator (stale unique id?)");
      return false;
    }
    if (h.nranks < 1 || h.rank < 0 || h.rank >= h.nranks) {
      send_reply(in.fd.get(), ncclInvalidUsage, cat("bootstrap: a rank announced rank ", h.rank, " of ", h.nranks),
                 nullptr);
      return false;
    }
    if (nranks_ == 0) {
      nranks_ = h.nranks;
      by_rank_.resize(static_cast<std::size_t>(nranks_));
      infos_.resize(static_cast<std::size_t>(nranks_));
      deadline_ = Clock::now() + timeout_;  // every rank must join within the timeout of the first one
    }
    const auto r = static_cast<std::size_t>(h.rank);
    if (h.nranks != nranks_) {
      const std::size_t other = first_joined();
      fail_all(ncclInvalidUsage,
               cat("bootstrap: ranks disagree on the communicator size: rank ", h.rank, " (pid ", h.info.pid,
                   ") called ncclCommInitRank with nranks=", h.nranks, ", rank ", other, " (pid ", infos_[other].pid,
                   ") with nranks=", nranks_),
               &in.fd);
      return false;
    }
    if (by_rank_[r].valid()) {
      fail_all(ncclInvalidUsage,
               cat("bootstrap: two processes called ncclCommInitRank as rank ", h.rank, " (pids ", infos_[r].pid,
                   " and ", h.info.pid, ")"),
               &in.fd);
      return false;
    }
    by_rank_[r] = std::move(in.fd);
    infos_[r] = h.info;
    ++joined_;
    return false;
  }

  std::size_t first_joined() const {
    for (std::size_t q = 0; q < by_rank_.size(); ++q) {
      if (by_rank_[q].valid()) return q;
    }
    return 0;
  }

  void fail_all(ncclResult_t code, const std::string& message, const Fd* also = nullptr) {
    warn(message);
    for (const Fd& s : by_rank_) {
      if (s.valid()) send_reply(s.get(), code, message, nullptr);
    }
    if (also != nullptr && also->valid()) send_reply(also->get(), code, message, nullptr);
    finished_ = true;
  }

  void answer_all() {
    for (const Fd& s : by_rank_) send_reply(s.get(), ncclSuccess, {}, &infos_);
  }

  Fd listener_;
  const std::uint64_t nonce_;
  const std::chrono::milliseconds timeout_;
  Deadline deadline_;
  int nranks_ = 0;  // unknown until the first Hello
  int joined_ = 0;
  bool finished_ = false;
  std::vector<Incoming> incoming_;
  std::vector<Fd> by_rank_;
  std::vector<PeerInfo> infos_;
};

std::uint64_t random_nonce() {
  std::random_device rd;
  std::uint64_t n = 0;
  while (n == 0) n = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  return n;
}

}  // namespace

Status start_bootstrap_root(ncclUniqueId& id) {
  std::chrono::milliseconds timeout{};
  if (Status st = bootstrap_timeout(timeout); !st.ok()) return st;
  std::uint32_t ip = 0;
  std::string interface_name;
  if (Status st = select_listen_address(ip, interface_name); !st.ok()) return st;
  Fd listener;
  UniqueIdContents contents;
  if (Status st = listen_on(ip, SOMAXCONN, listener, contents.root); !st.ok()) {
    return fail(st.code, cat("ncclGetUniqueId: bootstrap root listener on ", interface_name, ": ", st.message));
  }
  contents.nonce = random_nonce();
  try {
    auto root = std::make_unique<Root>(std::move(listener), contents.nonce, timeout);
    std::thread([r = std::move(root)] { r->run(); }).detach();
  } catch (const std::system_error& e) {
    return fail(ncclSystemError, cat("ncclGetUniqueId: cannot start the bootstrap root thread: ", e.what()));
  }
  encode_unique_id(contents, id);
  return success();
}

}  // namespace cuda_emu::nccl
