// sync_check.cpp — collective fingerprints, their running hash and the cross-rank comparison.
#include "comm/runtime/sync_check.hpp"

#include <cstdio>
#include <sstream>
#include <type_traits>

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/log.hpp"

namespace microddp::comm {

// Exchanged as raw bytes between ranks of the same build: no implicit padding, trivially copyable.
static_assert(sizeof(CollectiveFingerprint) == 24 && std::is_trivially_copyable_v<CollectiveFingerprint>);
static_assert(sizeof(SyncState) == 40 && std::is_trivially_copyable_v<SyncState>);

CollectiveFingerprint fingerprint(const CollectiveCall& c) {
  CollectiveFingerprint f;
  f.seq = c.seq;
  f.kind = static_cast<std::uint8_t>(c.kind);
  const core::TensorView* v = &c.recv;  // the view whose count and dtype are the same on every rank
  bool reduction = false, rooted = false;
  switch (c.kind) {
    case CollectiveKind::Barrier:
      v = nullptr;
      break;
    case CollectiveKind::AllReduce:
      reduction = true;
      break;
    case CollectiveKind::Broadcast:
      rooted = true;
      break;
    case CollectiveKind::Scatter:
      rooted = true;
      break;  // recv: c on every rank
    case CollectiveKind::Gather:
      rooted = true;
      v = &c.send;
      break;  // send: c on every rank
    case CollectiveKind::AllGather:
      v = &c.send;
      break;
    case CollectiveKind::ReduceScatter:
      reduction = true;
      break;  // recv: c
  }
  if (v != nullptr) {
    f.count = v->count;
    f.dtype = static_cast<std::uint8_t>(v->dtype);
  }
  if (reduction) f.op = static_cast<std::uint8_t>(c.op);
  if (rooted) f.root = c.root;
  return f;
}

std::string describe(const CollectiveFingerprint& f) {
  if (f.kind == CollectiveFingerprint::kNoCollective) return "none";
  const auto kind = static_cast<CollectiveKind>(f.kind);
  std::ostringstream os;
  os << collective_name(kind) << " seq=" << f.seq;
  if (kind == CollectiveKind::Barrier) return os.str();
  os << " count=" << f.count << " dtype=" << core::dtype_name(static_cast<core::DType>(f.dtype));
  if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter) {
    os << " op=" << core::reduce_op_name(static_cast<core::ReduceOp>(f.op));
  }
  if (kind == CollectiveKind::Broadcast || kind == CollectiveKind::Scatter || kind == CollectiveKind::Gather) {
    os << " root=" << f.root;
  }
  return os.str();
}

std::uint64_t chain_hash(std::uint64_t h, const CollectiveFingerprint& f) {
  auto mix = [&h](std::uint64_t v, int bytes) {
    unsigned char le[8];  // little-endian on every host, so mixed-endian jobs agree
    for (int i = 0; i < bytes; ++i) le[i] = static_cast<unsigned char>(v >> (8 * i));
    h = core::fnv1a64(le, static_cast<std::size_t>(bytes), h);
  };
  mix(f.seq, 8);
  mix(static_cast<std::uint64_t>(f.count), 8);
  mix(static_cast<std::uint32_t>(f.root), 4);
  mix(f.kind, 1);
  mix(f.dtype, 1);
  mix(f.op, 1);
  return h;
}

std::string compare_sync_states(const std::vector<SyncState>& all, bool debug, std::string_view where,
                                std::string_view backend) {
  auto same = [debug](const SyncState& a, const SyncState& b) {
    return debug ? (a.call == b.call && a.history == b.history) : (a.issued == b.issued && a.history == b.history);
  };
  bool agree = true;
  for (const auto& s : all) agree = agree && same(s, all.front());
  if (agree) return {};

  // Group ranks by state, in order of their lowest rank.
  std::vector<int> group(all.size(), -1);
  std::vector<std::size_t> leaders;
  for (std::size_t r = 0; r < all.size(); ++r) {
    for (std::size_t g = 0; g < leaders.size() && group[r] < 0; ++g) {
      if (same(all[r], all[leaders[g]])) group[r] = static_cast<int>(g);
    }
    if (group[r] < 0) {
      group[r] = static_cast<int>(leaders.size());
      leaders.push_back(r);
    }
  }
  bool history_only = debug;  // debug mode: the collectives match but earlier ones differed
  for (std::size_t g = 1; g < leaders.size(); ++g) {
    history_only = history_only && all[leaders[g]].call == all[leaders[0]].call;
  }
  std::ostringstream os;
  os << "collective desync (" << (debug ? "--debug-sync, before the collective ran" : where) << ", backend " << backend
     << "): ";
  for (std::size_t g = 0; g < leaders.size(); ++g) {
    std::vector<std::size_t> members;
    for (std::size_t r = 0; r < all.size(); ++r) {
      if (group[r] == static_cast<int>(g)) members.push_back(r);
    }
    if (g > 0) os << (g + 1 == leaders.size() ? (leaders.size() == 2 ? " while " : ", while ") : ", ");
    os << (members.size() == 1 ? "rank " : "ranks ");
    for (std::size_t i = 0; i < members.size(); ++i) os << (i ? "," : "") << members[i];
    const SyncState& s = all[leaders[g]];
    char hash[32];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(s.history));
    if (debug) {
      os << " issued " << describe(s.call);
      if (history_only) os << " (history hash " << hash << ")";
    } else {
      os << " issued " << s.issued << " collectives (history hash " << hash << ", last " << describe(s.call) << ")";
    }
  }
  if (history_only) {
    os << ". This collective matches, but the ones before it (issued before --debug-sync was turned on) differed.";
  } else if (debug) {
    os << ". Every rank must issue the same collectives in the same order.";
  } else {
    os << ". The ranks issued different collectives since the last check; rerun with --debug-sync to stop at the "
          "first one that differs.";
  }
  os << " Aborting the job.";
  return os.str();
}

SyncChecker::SyncChecker(MPI_Comm parent) {
  MDDP_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
  MDDP_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MDDP_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MDDP_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  all_.resize(static_cast<std::size_t>(size_));
}

SyncChecker::~SyncChecker() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);  // a destructor must not throw
}

void SyncChecker::before_collective(const CollectiveCall& call, bool debug, std::string_view backend) {
  const CollectiveFingerprint f = fingerprint(call);
  if (debug && size_ > 1) {
    const SyncState mine{state_.issued, state_.history, f};
    exchange(mine, true, "", backend);
  }
  state_.issued = call.seq;
  state_.history = chain_hash(state_.history, f);
  state_.call = f;
}

void SyncChecker::check(std::string_view where, std::string_view backend) {
  if (size_ > 1) exchange(state_, false, where, backend);
}

bool SyncChecker::all_equal(bool value) {
  const int mine[2] = {value ? 1 : 0, value ? -1 : 0};  // MAX of both: max and -min
  int most[2] = {0, 0};
  MDDP_MPI_CHECK(MPI_Allreduce(mine, most, 2, MPI_INT, MPI_MAX, comm_));
  return most[0] == -most[1];
}

void SyncChecker::exchange(const SyncState& mine, bool debug, std::string_view where, std::string_view backend) {
  MDDP_MPI_CHECK(MPI_Allgather(&mine, static_cast<int>(sizeof(SyncState)), MPI_BYTE, all_.data(),
                               static_cast<int>(sizeof(SyncState)), MPI_BYTE, comm_));
  bool agree = true;
  for (const auto& s : all_) {
    agree = agree && (debug ? (s.call == all_[0].call && s.history == all_[0].history)
                            : (s.issued == all_[0].issued && s.history == all_[0].history));
  }
  if (agree) return;  // the common path: no allocation, no formatting
  const std::string report = compare_sync_states(all_, debug, where, backend);
  core::log_line(core::LogLevel::Error, report);
  // Every rank saw the same table and is here: meet once so that every rank's report is printed
  // before the first rank's error handling aborts the job. Errors are ignored: we throw anyway.
  MPI_Barrier(comm_);
  throw core::Error("collective desync detected (" + std::string(debug ? "--debug-sync" : where) +
                    "); each rank printed what it issued");
}

}  // namespace microddp::comm
