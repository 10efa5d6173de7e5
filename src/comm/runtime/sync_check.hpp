// sync_check.hpp — desync detection: a fingerprint of every collective, a running hash over all of
// them, and their comparison across ranks.
//
// Why: every rank must issue the same collectives in the same order (docs/design.md). When one does not
// (a skipped collective, a different count, another root), the watchdog only helps if something
// hangs; with point-to-point backends a mismatched collective can instead complete with wrong data
// (tags repeat with seq mod 32768, and a barrier's messages can be taken for an all-reduce's). The
// fingerprint makes such a mismatch visible:
//   * check(): every rank contributes (collectives issued, running hash, last collective); called
//     at start-up and every N training steps. Cost: one small all-gather per check.
//   * debug mode: before EVERY collective, on the thread that is about to execute it, ranks
//     all-gather that collective's fingerprint, so the first differing collective is named on
//     every rank before any of its data moves. Cost: one small all-gather per collective.
// Exchanges run on a private MPI_Comm_dup of the parent (they never match a backend's messages).
//
// Contract:
//   * before_collective() is called for every collective in issue order, never concurrently with
//     itself or with check(). check() needs no collective in flight (the caller synchronises).
//   * A mismatch is seen identically by every rank (they compare the same all-gathered table): each
//     rank logs the same report (which ranks disagree, their sequence numbers and collectives), all
//     ranks meet in a barrier so every report is out, then each throws core::Error (the caller
//     aborts the job). The exchange itself allocates nothing (the table is sized at construction).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comm/types.hpp"
#include "core/hash.hpp"

namespace microddp::comm {

// What every rank must agree on about one collective. Counts are the rank-invariant ones:
// all_reduce/broadcast the buffer count; scatter/gather/all_gather/reduce_scatter the per-rank block
// count c; barrier 0. op only for reductions, root only for rooted collectives (else 0).
struct CollectiveFingerprint {
  std::uint64_t seq = 0;
  std::int64_t count = 0;
  std::int32_t root = 0;
  std::uint8_t kind = kNoCollective;  // CollectiveKind, or kNoCollective
  std::uint8_t dtype = 0;             // core::DType (0 for barrier)
  std::uint8_t op = 0;                // core::ReduceOp (0 unless a reduction)
  std::uint8_t pad = 0;
  static constexpr std::uint8_t kNoCollective = 0xff;
  bool operator==(const CollectiveFingerprint&) const = default;
};

CollectiveFingerprint fingerprint(const CollectiveCall& call);
// "all_reduce seq=2 count=1000 dtype=f32 op=sum", "barrier seq=3", "broadcast seq=4 count=8 dtype=f32 root=1",
// "none" for kNoCollective.
std::string describe(const CollectiveFingerprint& f);
// Running hash: FNV-1a over the fingerprint's fields, chained (order matters).
std::uint64_t chain_hash(std::uint64_t history, const CollectiveFingerprint& f);
constexpr std::uint64_t kEmptyHistory = core::kFnvOffsetBasis;  // the hash of no collectives

// One rank's contribution to a comparison (exchanged as bytes; same build on every rank).
struct SyncState {
  std::uint64_t issued = 0;               // collectives issued before `call` (debug) / so far (check)
  std::uint64_t history = kEmptyHistory;  // chain_hash over those collectives
  CollectiveFingerprint call;             // debug: the collective about to run; check: the last one issued
};

// Pure comparison of every rank's state (index = rank). Returns "" when all agree, otherwise the
// report: ranks grouped by what they issued. debug: compares `call` and `history`; check: compares
// `issued` and `history` (`call` is reported). `where` names the check ("start-up", "step 200").
std::string compare_sync_states(const std::vector<SyncState>& all, bool debug, std::string_view where,
                                std::string_view backend);

class SyncChecker {
 public:
  explicit SyncChecker(MPI_Comm parent);  // collective over parent (MPI_Comm_dup)
  ~SyncChecker();
  SyncChecker(const SyncChecker&) = delete;
  SyncChecker& operator=(const SyncChecker&) = delete;

  // Records `call` (seq assigned) in the running hash; with debug, first compares it across ranks.
  void before_collective(const CollectiveCall& call, bool debug, std::string_view backend);
  // Compares (issued, history) across ranks; throws core::Error on a mismatch.
  void check(std::string_view where, std::string_view backend);
  // Collective: true when every rank passed the same value (ranks that disagree about debug mode
  // would otherwise deadlock: only some of them would exchange fingerprints).
  bool all_equal(bool value);

  std::uint64_t history() const { return state_.history; }
  std::uint64_t issued() const { return state_.issued; }

 private:
  // All-gathers `mine`, compares; on mismatch logs, meets the other ranks, throws.
  void exchange(const SyncState& mine, bool debug, std::string_view where, std::string_view backend);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  SyncState state_;  // issued, history and the last collective
  std::vector<SyncState> all_;
};

}  // namespace microddp::comm
