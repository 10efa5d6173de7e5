// bootstrap_rank.cpp — ncclCommInitRank's side of the bootstrap (bootstrap.hpp): Hello to the root,
// everyone's PeerInfo back, the duplicate-GPU check, then the full mesh of data connections.
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap.hpp"
#include "bootstrap_protocol.hpp"
#include "emu_internal.hpp"
#include "host_identity.hpp"
#include "net_interface.hpp"
#include "unique_id.hpp"

namespace cuda_emu::nccl {

namespace {

// NCCL_EMU_BOOTSTRAP_TIMEOUT_S's default: generous for a loaded CI machine starting many ranks, still
// short enough that a rank that never arrives ends the job instead of hanging it.
constexpr double kDefaultBootstrapTimeoutS = 120.0;
// The root reports missing ranks at most `timeout` after the first rank joined; a rank waits this much
// longer for the root's reply, so that it reports the root's message (naming the missing ranks) and
// not just its own timeout.
constexpr auto kReplyGrace = std::chrono::seconds(5);
// Longest accepted error message from the root.
constexpr std::uint32_t kMaxRootMessage = 64 * 1024;
// How long an accepted data connection may take to send its Handshake (a stray one is dropped after).
constexpr auto kHandshakeLimit = std::chrono::seconds(5);

Status check_duplicate_gpus(const std::vector<PeerInfo>& peers) {
  for (std::size_t i = 0; i < peers.size(); ++i) {
    for (std::size_t j = i + 1; j < peers.size(); ++j) {
      const PeerInfo &a = peers[i], &b = peers[j];
      if (a.host_hash != b.host_hash || std::memcmp(a.uuid, b.uuid, sizeof a.uuid) != 0) continue;
      return fail(ncclInvalidUsage, cat("Duplicate GPU detected: rank ", i, " and rank ", j, " both on CUDA device ",
                                        a.device, " (", uuid_string(a.uuid), ") of host ", a.host_name, " (pids ",
                                        a.pid, " and ", b.pid, "); NCCL needs one GPU per rank of a communicator"));
    }
  }
  return success();
}

PeerInfo my_info(int rank, int device, const Endpoint& listener) {
  PeerInfo p;
  p.ip = listener.ip;
  p.port = listener.port;
  p.rank = rank;
  p.device = device;
  p.pid = static_cast<std::int32_t>(::getpid());
  const HostIdentity host = this_host();
  p.host_hash = host.hash;
  std::strncpy(p.host_name, host.name.c_str(), sizeof p.host_name - 1);
  const std::array<unsigned char, 16> uuid = cuda_emu::device_uuid(device);
  std::memcpy(p.uuid, uuid.data(), sizeof p.uuid);
  return p;
}

// Hello to the root, everyone's PeerInfo back.
Status exchange_with_root(const UniqueIdContents& id, int nranks, const PeerInfo& me, Deadline start,
                          std::chrono::milliseconds timeout, std::vector<PeerInfo>& peers) {
  const std::string who = cat("rank ", me.rank, " of ", nranks, ": bootstrap");
  Fd root;
  if (Status st = connect_to(id.root, start + timeout, root, cat(who, ": connecting to the root")); !st.ok()) return st;
  Hello hello;
  hello.nonce = id.nonce;
  hello.rank = me.rank;
  hello.nranks = nranks;
  hello.info = me;
  if (Status st = write_exact(root.get(), &hello, sizeof hello, start + timeout, cat(who, ": sending to the root"));
      !st.ok()) {
    return st;
  }
  Reply reply;
  const std::string waiting = cat(who, ": waiting for the other ranks via the root at ", id.root.str(), " (",
                                  std::chrono::duration<double>(timeout).count(), " s, NCCL_EMU_BOOTSTRAP_TIMEOUT_S)");
  const Deadline reply_deadline = start + timeout + kReplyGrace;
  if (Status st = read_exact(root.get(), &reply, sizeof reply, reply_deadline, waiting); !st.ok()) return st;
  if (reply.magic != kBootstrapMagic) return fail(ncclSystemError, cat(who, ": unexpected reply from the root"));
  if (reply.status != ncclSuccess) {
    std::string message(std::min(reply.message_bytes, kMaxRootMessage), '\0');
    if (Status st = read_exact(root.get(), message.data(), message.size(), reply_deadline, waiting); !st.ok())
      return st;
    return fail(static_cast<ncclResult_t>(reply.status), cat("rank ", me.rank, ": ", message));
  }
  if (reply.nranks != nranks)
    return fail(ncclInternalError, cat(who, ": the root answered for ", reply.nranks, " ranks"));
  peers.resize(static_cast<std::size_t>(nranks));
  if (Status st = read_exact(root.get(), peers.data(), peers.size() * sizeof(PeerInfo), reply_deadline, waiting);
      !st.ok()) {
    return st;
  }
  for (int q = 0; q < nranks; ++q) {
    if (peers[static_cast<std::size_t>(q)].rank != q) return fail(ncclInternalError, cat(who, ": corrupt peer table"));
  }
  return success();
}

// Rank r connects to every rank below it and accepts every rank above it.
Status build_mesh(int listener, const std::vector<PeerInfo>& peers, int rank, std::uint64_t nonce, Deadline deadline,
                  std::vector<Fd>& sockets) {
  const int n = static_cast<int>(peers.size());
  sockets.clear();
  sockets.resize(peers.size());
  for (int q = 0; q < rank; ++q) {
    const PeerInfo& p = peers[static_cast<std::size_t>(q)];
    const Endpoint at{p.ip, p.port};
    const std::string what = cat("rank ", rank, ": connecting to ", describe_peer(p), " at ", at.str());
    Fd& s = sockets[static_cast<std::size_t>(q)];
    if (Status st = connect_to(at, deadline, s, what); !st.ok()) return st;
    Handshake h;
    h.nonce = nonce;
    h.from = rank;
    h.to = q;
    if (Status st = write_exact(s.get(), &h, sizeof h, deadline, what); !st.ok()) return st;
  }
  for (int remaining = n - 1 - rank; remaining > 0;) {
    Fd s;
    if (Status st = accept_one(listener, deadline, s, "accept"); !st.ok()) {
      std::string missing;
      for (int q = rank + 1; q < n; ++q) {
        if (!sockets[static_cast<std::size_t>(q)].valid()) missing += cat(missing.empty() ? "" : ", ", q);
      }
      return fail(st.code, cat("rank ", rank, ": waiting for rank(s) ", missing, " to connect: ", st.message));
    }
    Handshake h;
    const Deadline limit = std::min(deadline, Clock::now() + kHandshakeLimit);
    if (!read_exact(s.get(), &h, sizeof h, limit, "handshake").ok()) continue;  // a stray connection
    if (h.magic != kBootstrapMagic || h.nonce != nonce || h.to != rank || h.from <= rank || h.from >= n ||
        sockets[static_cast<std::size_t>(h.from)].valid()) {
      warn(cat("rank ", rank, ": dropped a data connection that does not belong to this communicator"));
      continue;
    }
    sockets[static_cast<std::size_t>(h.from)] = std::move(s);
    --remaining;
  }
  return success();
}

}  // namespace

Status bootstrap_timeout(std::chrono::milliseconds& out) {
  double seconds = kDefaultBootstrapTimeoutS;
  if (const char* v = std::getenv("NCCL_EMU_BOOTSTRAP_TIMEOUT_S"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    seconds = std::strtod(v, &end);
    // Upper bound: a week; anything longer is a typo (and would overflow nothing, but is meaningless).
    if (end == v || *end != '\0' || !std::isfinite(seconds) || seconds <= 0 || seconds > 7 * 24 * 3600.0) {
      return fail(ncclInvalidUsage, cat("NCCL_EMU_BOOTSTRAP_TIMEOUT_S='", v, "' is not a number of seconds > 0"));
    }
  }
  out = std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000.0)));
  return success();
}

Status bootstrap_rank(const ncclUniqueId& id, int nranks, int rank, int device, std::shared_ptr<Comm>& out) {
  const Deadline start = Clock::now();
  std::chrono::milliseconds timeout{};
  if (Status st = bootstrap_timeout(timeout); !st.ok()) return st;
  UniqueIdContents contents;
  if (!decode_unique_id(id, contents)) {
    return fail(
        ncclInvalidArgument,
        "ncclCommInitRank: the unique id was not made by this library's ncclGetUniqueId (or was corrupted in transit)");
  }
  std::uint32_t ip = 0;
  std::string interface_name;
  if (Status st = select_listen_address(ip, interface_name); !st.ok()) return st;
  Fd listener;
  Endpoint bound;
  if (Status st = listen_on(ip, SOMAXCONN, listener, bound); !st.ok()) {
    return fail(st.code, cat("rank ", rank, ": data listener on ", interface_name, ": ", st.message));
  }
  const PeerInfo me = my_info(rank, device, bound);
  std::vector<PeerInfo> peers;
  if (Status st = exchange_with_root(contents, nranks, me, start, timeout, peers); !st.ok()) return st;
  if (Status st = check_duplicate_gpus(peers); !st.ok()) return st;
  std::vector<Fd> sockets;
  if (Status st = build_mesh(listener.get(), peers, rank, contents.nonce, Clock::now() + timeout, sockets); !st.ok()) {
    return st;
  }
  out = std::make_shared<Comm>(rank, nranks, device, std::move(peers), std::move(sockets));
  return success();
}

}  // namespace cuda_emu::nccl
