// test_sync_check.cpp — the desync fingerprint as pure functions (no MPI): which fields count for
// each collective (rank-invariant counts, op only for reductions, root only for rooted ones), the
// running hash's sensitivity to every field and to order, and the report naming each group of ranks.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "comm/runtime/sync_check.hpp"

namespace microddp::comm {
namespace {

float g_buf[64];

CollectiveCall make(CollectiveKind kind, std::int64_t send_count, std::int64_t recv_count, ReduceOp op = ReduceOp::Sum,
                    int root = 0, std::uint64_t seq = 1) {
  CollectiveCall c;
  c.kind = kind;
  c.send = core::TensorView::of(g_buf, send_count);
  c.recv = core::TensorView::of(g_buf, recv_count);
  c.op = op;
  c.root = root;
  c.seq = seq;
  return c;
}

TEST(SyncCheck, FingerprintUsesRankInvariantFields) {
  // Gather: non-root ranks pass an empty recv; only the block count c (send) must agree.
  EXPECT_EQ(fingerprint(make(CollectiveKind::Gather, 4, 12, ReduceOp::Sum, 1)),
            fingerprint(make(CollectiveKind::Gather, 4, 0, ReduceOp::Max, 1)));
  // Scatter: only the root has a send buffer.
  EXPECT_EQ(fingerprint(make(CollectiveKind::Scatter, 12, 4)), fingerprint(make(CollectiveKind::Scatter, 0, 4)));
  // The op of a non-reduction and the root of a non-rooted collective do not matter.
  EXPECT_EQ(fingerprint(make(CollectiveKind::Broadcast, 8, 8, ReduceOp::Sum, 1)),
            fingerprint(make(CollectiveKind::Broadcast, 8, 8, ReduceOp::Max, 1)));
  EXPECT_EQ(fingerprint(make(CollectiveKind::AllReduce, 8, 8, ReduceOp::Sum, 0)),
            fingerprint(make(CollectiveKind::AllReduce, 8, 8, ReduceOp::Sum, 3)));
  // What must differ does.
  EXPECT_NE(fingerprint(make(CollectiveKind::AllReduce, 8, 8)), fingerprint(make(CollectiveKind::AllReduce, 7, 7)));
  EXPECT_NE(fingerprint(make(CollectiveKind::AllReduce, 8, 8, ReduceOp::Sum)),
            fingerprint(make(CollectiveKind::AllReduce, 8, 8, ReduceOp::Max)));
  EXPECT_NE(fingerprint(make(CollectiveKind::Broadcast, 8, 8, ReduceOp::Sum, 0)),
            fingerprint(make(CollectiveKind::Broadcast, 8, 8, ReduceOp::Sum, 1)));
  EXPECT_NE(fingerprint(make(CollectiveKind::AllReduce, 8, 8)),
            fingerprint(make(CollectiveKind::ReduceScatter, 24, 8)));
  CollectiveCall f64 = make(CollectiveKind::AllReduce, 8, 8);
  f64.send.dtype = f64.recv.dtype = core::DType::F64;
  EXPECT_NE(fingerprint(f64), fingerprint(make(CollectiveKind::AllReduce, 8, 8)));
}

TEST(SyncCheck, DescribeNamesTheCollective) {
  EXPECT_EQ(describe(fingerprint(make(CollectiveKind::AllReduce, 1000, 1000, ReduceOp::Sum, 0, 2))),
            "all_reduce seq=2 count=1000 dtype=f32 op=sum");
  EXPECT_EQ(describe(fingerprint(make(CollectiveKind::Barrier, 0, 0, ReduceOp::Sum, 0, 3))), "barrier seq=3");
  EXPECT_EQ(describe(fingerprint(make(CollectiveKind::Broadcast, 8, 8, ReduceOp::Sum, 1, 4))),
            "broadcast seq=4 count=8 dtype=f32 root=1");
  EXPECT_EQ(describe(CollectiveFingerprint{}), "none");
}

TEST(SyncCheck, HistoryHashSeesEveryFieldAndTheOrder) {
  const auto a = fingerprint(make(CollectiveKind::AllReduce, 8, 8, ReduceOp::Sum, 0, 1));
  const auto b = fingerprint(make(CollectiveKind::Barrier, 0, 0, ReduceOp::Sum, 0, 2));
  EXPECT_NE(chain_hash(chain_hash(kEmptyHistory, a), b), chain_hash(chain_hash(kEmptyHistory, b), a));
  // One field changed at a time: each must change the hash.
  const std::vector<std::pair<const char*, void (*)(CollectiveFingerprint&)>> edits = {
      {"count", [](CollectiveFingerprint& f) { f.count = 9; }}, {"seq", [](CollectiveFingerprint& f) { f.seq = 2; }},
      {"root", [](CollectiveFingerprint& f) { f.root = 1; }},   {"op", [](CollectiveFingerprint& f) { f.op = 1; }},
      {"dtype", [](CollectiveFingerprint& f) { f.dtype = 1; }},
  };
  for (const auto& [field, edit] : edits) {
    auto changed = a;
    edit(changed);
    EXPECT_NE(chain_hash(kEmptyHistory, a), chain_hash(kEmptyHistory, changed)) << field;
  }
}

TEST(SyncCheck, AgreeingRanksGiveNoReport) {
  SyncState s;
  s.issued = 5;
  s.call = fingerprint(make(CollectiveKind::AllReduce, 8, 8, ReduceOp::Sum, 0, 6));
  EXPECT_EQ(compare_sync_states({s, s, s}, true, "", "rd"), "");
  EXPECT_EQ(compare_sync_states({s, s, s}, false, "start-up", "rd"), "");
}

TEST(SyncCheck, DebugReportGroupsRanksByCollective) {
  SyncState ar, bar;
  ar.issued = bar.issued = 1;
  ar.call = fingerprint(make(CollectiveKind::AllReduce, 1000, 1000, ReduceOp::Sum, 0, 2));
  bar.call = fingerprint(make(CollectiveKind::Barrier, 0, 0, ReduceOp::Sum, 0, 2));
  const std::string r = compare_sync_states({ar, ar, bar}, true, "", "naive");
  EXPECT_NE(r.find("ranks 0,1 issued all_reduce seq=2 count=1000 dtype=f32 op=sum while rank 2 issued barrier seq=2"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("backend naive"), std::string::npos) << r;
  // Three different collectives, the odd one out in the middle.
  SyncState other = ar;
  other.call.count = 999;
  const std::string r3 = compare_sync_states({ar, other, ar, bar}, true, "", "mpi");
  EXPECT_NE(r3.find("ranks 0,2 issued all_reduce seq=2 count=1000"), std::string::npos) << r3;
  EXPECT_NE(r3.find(", rank 1 issued all_reduce seq=2 count=999"), std::string::npos) << r3;
  EXPECT_NE(r3.find(", while rank 3 issued barrier seq=2"), std::string::npos) << r3;
}

TEST(SyncCheck, DebugReportSaysWhenOnlyTheHistoryDiffers) {
  SyncState a, b;
  a.call = b.call = fingerprint(make(CollectiveKind::AllReduce, 8, 8, ReduceOp::Sum, 0, 4));
  a.issued = b.issued = 3;
  b.history = a.history + 1;
  const std::string r = compare_sync_states({a, b}, true, "", "mpi");
  EXPECT_NE(r.find("history hash"), std::string::npos) << r;
  EXPECT_NE(r.find("before --debug-sync was turned on"), std::string::npos) << r;
}

TEST(SyncCheck, PeriodicReportNamesSequenceNumbersAndLastCollectives) {
  SyncState ahead, behind;
  ahead.issued = 1203;
  ahead.call = fingerprint(make(CollectiveKind::AllReduce, 1, 1, ReduceOp::Sum, 0, 1203));
  ahead.history = 1;
  behind.issued = 1202;
  behind.call = fingerprint(make(CollectiveKind::Barrier, 0, 0, ReduceOp::Sum, 0, 1202));
  behind.history = 2;
  const std::string r = compare_sync_states({ahead, ahead, behind}, false, "sync check at step 200", "ring");
  EXPECT_NE(r.find("sync check at step 200"), std::string::npos) << r;
  EXPECT_NE(r.find("ranks 0,1 issued 1203 collectives"), std::string::npos) << r;
  EXPECT_NE(r.find("last all_reduce seq=1203 count=1"), std::string::npos) << r;
  EXPECT_NE(r.find("rank 2 issued 1202 collectives"), std::string::npos) << r;
  EXPECT_NE(r.find("last barrier seq=1202"), std::string::npos) << r;
  EXPECT_NE(r.find("--debug-sync"), std::string::npos) << r;
  // Same count, different history: still a mismatch.
  behind.issued = 1203;
  EXPECT_NE(compare_sync_states({ahead, behind}, false, "x", "ring"), "");
}

}  // namespace
}  // namespace microddp::comm
