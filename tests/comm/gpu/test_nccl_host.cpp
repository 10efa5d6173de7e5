// test_nccl_host.cpp — the host-side arithmetic of the GPU communication backends, on the CPU (no GPU,
// no NCCL, no MPI): the unique-id message (nccl_setup.hpp), the GPU choice per rank, the staging plans
// (staging_plan.hpp) and the GPU ring's use of the ring schedule (ring_schedule.hpp, itself tested in
// test_ring_layout.cpp), replayed on host arrays for every rank count 1..9 and counts around the rank
// count, compared exactly (integers).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "comm/gpu/gpu_sharing.hpp"
#include "comm/gpu/nccl_setup.hpp"
#include "comm/algorithms/ring_schedule.hpp"
#include "comm/gpu/staging_plan.hpp"
#include "core/error.hpp"

namespace microddp::comm {
namespace {

using core::DType;
using core::TensorView;

UniqueIdMessage sample_message() {
  char id[kNcclUniqueIdBytes];
  for (std::size_t i = 0; i < kNcclUniqueIdBytes; ++i) id[i] = static_cast<char>(i * 7 + 3);
  return make_unique_id_message(id, 4, 22809);
}

TEST(NcclSetup, UniqueIdMessageRoundTrips) {
  const UniqueIdMessage m = sample_message();
  EXPECT_NO_THROW(check_unique_id_message(m, 4, 22809));
  EXPECT_EQ(m.id[5], static_cast<char>(38));
}

TEST(NcclSetup, UniqueIdMessageRejectsCorruptionAndMismatch) {
  UniqueIdMessage m = sample_message();
  m.id[100] ^= 1;
  EXPECT_THROW(check_unique_id_message(m, 4, 22809), core::Error);  // checksum
  m = sample_message();
  EXPECT_THROW(check_unique_id_message(m, 3, 22809), core::Error);  // world size
  EXPECT_THROW(check_unique_id_message(m, 4, 22900), core::Error);  // NCCL version
  m.world_size = 3;                                                 // changed after the checksum
  EXPECT_THROW(check_unique_id_message(m, 3, 22809), core::Error);
}

TEST(NcclSetup, DeviceForRank) {
  EXPECT_EQ(nccl_device_for_rank(0, 1, 1), 0);
  EXPECT_EQ(nccl_device_for_rank(3, 4, 8), 3);
  EXPECT_THROW(nccl_device_for_rank(0, 1, 0), core::Error);  // no GPU
  // srun --gpus-per-task=1: every rank sees one GPU, its own, as device 0. Whether two ranks then
  // really share one is decided by UUID (gpu_sharing.hpp), not here.
  EXPECT_EQ(nccl_device_for_rank(1, 2, 1), 0);
  EXPECT_EQ(nccl_device_for_rank(3, 4, 1), 0);
  EXPECT_EQ(nccl_device_for_rank(5, 8, 4), 1);               // 8 ranks on 4 visible GPUs: round robin
  EXPECT_THROW(nccl_device_for_rank(2, 2, 4), core::Error);  // bad local rank
}

// ---- which ranks share a GPU (gpu_sharing.hpp) ---------------------------------------------------

GpuIdentity gpu(unsigned char id, const char* host = "n1") {
  GpuIdentity g;
  g.uses_gpu = true;
  g.uuid.fill(0);
  g.uuid[15] = id;
  g.host = host;
  return g;
}

std::string short_uuid(const std::array<unsigned char, 16>& u) { return "U" + std::to_string(u[15]); }

TEST(GpuSharing, OneGpuPerRankIsNotShared) {
  // srun --gpus-per-task=1 on two nodes: 4 ranks, all see "device 0", UUIDs all different.
  const std::vector<GpuIdentity> ranks = {gpu(1, "n1"), gpu(2, "n1"), gpu(3, "n2"), gpu(4, "n2")};
  for (int me = 0; me < 4; ++me) {
    const GpuSharing s = analyze_gpu_sharing(ranks, me);
    EXPECT_EQ(s.max_ranks_per_gpu, 1);
    EXPECT_FALSE(s.shared());
    EXPECT_TRUE(s.peers.empty());
    EXPECT_EQ(s.example, "");
  }
}

TEST(GpuSharing, SharedGpuNamesTheRanksIdenticallyEverywhere) {
  // Two ranks of node n2 on one GPU; ranks 0 and 1 have their own.
  const std::vector<GpuIdentity> ranks = {gpu(1, "n1"), gpu(2, "n1"), gpu(7, "n2"), gpu(7, "n2"), gpu(7, "n2")};
  const GpuSharing s2 = analyze_gpu_sharing(ranks, 2, short_uuid);
  EXPECT_EQ(s2.max_ranks_per_gpu, 3);
  EXPECT_EQ(s2.peers, (std::vector<int>{3, 4}));
  EXPECT_EQ(s2.example, "ranks 2, 3 and 4 on host n2 share one GPU (U7)");
  const GpuSharing s0 = analyze_gpu_sharing(ranks, 0, short_uuid);
  EXPECT_TRUE(s0.shared());  // the verdict is the job's, the same on every rank
  EXPECT_TRUE(s0.peers.empty());
  EXPECT_EQ(s0.example, s2.example);
}

TEST(GpuSharing, CpuRanksAreIgnored) {
  std::vector<GpuIdentity> ranks = {gpu(1), gpu(1), gpu(1)};
  ranks[1].uses_gpu = false;
  ranks[2].uses_gpu = false;
  EXPECT_EQ(analyze_gpu_sharing(ranks, 0).max_ranks_per_gpu, 1);
  EXPECT_EQ(analyze_gpu_sharing(ranks, 0).ranks_without_gpu, 2);
  ranks[0].uses_gpu = false;
  EXPECT_EQ(analyze_gpu_sharing(ranks, 0).max_ranks_per_gpu, 0);
  EXPECT_EQ(analyze_gpu_sharing(ranks, 0).ranks_without_gpu, 3);
  EXPECT_THROW(analyze_gpu_sharing(ranks, 3), core::Error);
}

// ---- staging plans -----------------------------------------------------------------------------

CollectiveCall call(CollectiveKind k, float* s, std::int64_t sn, float* r, std::int64_t rn, int root = 0) {
  return CollectiveCall{k, TensorView::of(s, sn), TensorView::of(r, rn), core::ReduceOp::Sum, root, 1};
}

TEST(StagingPlan, OutOfPlaceUsesTwoRegions) {
  std::vector<float> a(10), b(10);
  const StagingPlan p = plan_staging(call(CollectiveKind::AllReduce, a.data(), 10, b.data(), 10), 0);
  ASSERT_EQ(p.region_count, 2);
  EXPECT_TRUE(p.regions[0].copy_in);
  EXPECT_FALSE(p.regions[1].copy_in);  // pure output: not copied in
  EXPECT_EQ(p.regions[1].bytes, 40);
  EXPECT_EQ(p.send.region, 0);
  EXPECT_EQ(p.recv.region, 1);
  EXPECT_TRUE(p.copy_out);
}

TEST(StagingPlan, InPlaceStaysInPlace) {
  std::vector<float> a(12);
  // all_reduce in place: one region, same offsets
  StagingPlan p = plan_staging(call(CollectiveKind::AllReduce, a.data(), 12, a.data(), 12), 0);
  ASSERT_EQ(p.region_count, 1);
  EXPECT_EQ(p.send.offset_bytes, 0);
  EXPECT_EQ(p.recv.offset_bytes, 0);
  // all_gather in place at rank 2 of 3 (c = 4): send is block 2 of recv
  p = plan_staging(call(CollectiveKind::AllGather, a.data() + 8, 4, a.data(), 12), 2);
  ASSERT_EQ(p.region_count, 1);
  EXPECT_EQ(p.regions[0].bytes, 48);
  EXPECT_EQ(p.send.offset_bytes, 32);
  EXPECT_EQ(p.recv.offset_bytes, 0);
  // reduce_scatter in place: result in the first c of send; only those bytes come back
  p = plan_staging(call(CollectiveKind::ReduceScatter, a.data(), 12, a.data(), 4), 1);
  ASSERT_EQ(p.region_count, 1);
  EXPECT_EQ(p.regions[0].bytes, 48);
  EXPECT_EQ(p.recv.offset_bytes, 0);

  char* stage[2] = {reinterpret_cast<char*>(0x1000), reinterpret_cast<char*>(0x9000)};
  const CollectiveCall staged = staged_call(
      call(CollectiveKind::AllGather, a.data() + 8, 4, a.data(), 12),
      plan_staging(call(CollectiveKind::AllGather, a.data() + 8, 4, a.data(), 12), 2), stage, core::Device::Cuda);
  EXPECT_EQ(staged.send.data, reinterpret_cast<char*>(0x1000) + 32);
  EXPECT_EQ(staged.recv.data, reinterpret_cast<void*>(0x1000));
  EXPECT_EQ(staged.send.device, core::Device::Cuda);
}

TEST(StagingPlan, RootedCollectivesStageOnlyWhatTheRankUses) {
  std::vector<float> a(6), b(2);
  // scatter: a non-root's send is ignored
  StagingPlan p = plan_staging(call(CollectiveKind::Scatter, nullptr, 0, b.data(), 2, 1), 0);
  ASSERT_EQ(p.region_count, 1);
  EXPECT_EQ(p.send.region, -1);
  EXPECT_FALSE(p.regions[0].copy_in);
  // gather: a non-root's recv is ignored, nothing comes back
  p = plan_staging(call(CollectiveKind::Gather, b.data(), 2, nullptr, 0, 1), 0);
  ASSERT_EQ(p.region_count, 1);
  EXPECT_EQ(p.recv.region, -1);
  EXPECT_FALSE(p.copy_out);
  // gather in place at the root (rank 1 of 3): send is block 1 of recv
  p = plan_staging(call(CollectiveKind::Gather, a.data() + 2, 2, a.data(), 6, 1), 1);
  ASSERT_EQ(p.region_count, 1);
  EXPECT_EQ(p.send.offset_bytes, 8);
  // broadcast: recv is input and output
  p = plan_staging(call(CollectiveKind::Broadcast, a.data(), 6, a.data(), 6, 0), 1);
  ASSERT_EQ(p.region_count, 1);
  EXPECT_TRUE(p.regions[0].copy_in);
  EXPECT_TRUE(p.copy_out);
  // count 0 and barrier: nothing staged, nothing touched
  p = plan_staging(call(CollectiveKind::AllReduce, nullptr, 0, nullptr, 0), 0);
  EXPECT_EQ(p.region_count, 0);
  EXPECT_FALSE(p.copy_out);
  p = plan_staging(CollectiveCall{}, 0);
  EXPECT_EQ(p.region_count, 0);
}

// ---- GPU ring schedule, replayed on the host ---------------------------------------------------

// Runs the schedule as gpu_ring_backend.cpp does, with n simulated ranks: each step's sends are
// snapshotted before any receive lands (what NCCL's grouped send/recv guarantees), then reduced.
std::vector<std::vector<std::int64_t>> replay_ring(int n, std::int64_t count) {
  std::vector<std::vector<std::int64_t>> in(n), out(n, std::vector<std::int64_t>(static_cast<std::size_t>(count), -7));
  for (int r = 0; r < n; ++r) {
    for (std::int64_t i = 0; i < count; ++i) in[r].push_back((r + 1) * 1000 + i);
  }
  auto block = [&](int b) { return even_part(count, n, b); };
  for (int s = 0; s <= n - 2; ++s) {
    std::vector<std::vector<std::int64_t>> wire(n);
    for (int r = 0; r < n; ++r) {
      const IndexRange sb = block(rs_send_block(r, n, s));
      const auto& src = s == 0 ? in[r] : out[r];
      wire[r].assign(src.begin() + sb.begin, src.begin() + sb.begin + sb.count);
    }
    for (int r = 0; r < n; ++r) {
      const IndexRange rb = block(rs_recv_block(r, n, s));
      const auto& got = wire[ring_mod(r - 1, n)];
      EXPECT_EQ(static_cast<std::int64_t>(got.size()), rb.count) << "send/recv lengths disagree";
      for (std::int64_t i = 0; i < rb.count; ++i) out[r][rb.begin + i] = in[r][rb.begin + i] + got[i];
    }
  }
  for (int s = 0; s <= n - 2; ++s) {
    std::vector<std::vector<std::int64_t>> wire(n);
    for (int r = 0; r < n; ++r) {
      const IndexRange sb = block(ag_send_block(r, n, s));
      wire[r].assign(out[r].begin() + sb.begin, out[r].begin() + sb.begin + sb.count);
    }
    for (int r = 0; r < n; ++r) {
      const IndexRange rb = block(ag_recv_block(r, n, s));
      const auto& got = wire[ring_mod(r - 1, n)];
      EXPECT_EQ(static_cast<std::int64_t>(got.size()), rb.count);
      for (std::int64_t i = 0; i < rb.count; ++i) out[r][rb.begin + i] = got[i];
    }
  }
  if (n == 1) out[0] = in[0];
  return out;
}

TEST(GpuRingPlan, ReplayGivesTheSumOnEveryRank) {
  for (int n = 1; n <= 9; ++n) {
    for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{n - 1}, std::int64_t{n},
                               std::int64_t{n + 1}, std::int64_t{3 * n + 2}, std::int64_t{1000}}) {
      if (count < 0) continue;
      const auto out = replay_ring(n, count);
      for (int r = 0; r < n; ++r) {
        for (std::int64_t i = 0; i < count; ++i) {
          const std::int64_t want = 1000LL * n * (n + 1) / 2 + n * i;
          ASSERT_EQ(out[r][i], want) << "n=" << n << " count=" << count << " rank " << r << " element " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace microddp::comm
