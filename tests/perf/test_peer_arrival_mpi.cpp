// test_peer_arrival_mpi.cpp — PeerArrival's lag across real ranks: rank r finishes backward
// (r + 1) ms after the previous loss sync in every kept step, plus a per-step offset; the slowest
// rank is the last one, so rank r's lag is exactly (size - 1 - r) ms, on every backend, also when
// one rank lost a step's events.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/factory.hpp"
#include "core/event_log.hpp"
#include "perf/peer_arrival.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp {
namespace {

class PeerArrivalRanks : public ::testing::TestWithParam<const char*> {};

TEST_P(PeerArrivalRanks, LagIsTheDistanceToTheSlowestRank) {
  const auto& rt = testing::runtime();
  auto comm = comm::make_communicator(GetParam(), rt);
  perf::PeerArrival a;
  constexpr std::int64_t kMs = 1000000;
  std::int64_t sync_end = 0;
  for (std::int64_t step = 0; step < 6; ++step) {
    core::Event bwd, sync;
    bwd.kind = core::EventKind::Backward;
    sync.kind = core::EventKind::LossSync;
    bwd.step = sync.step = step;
    bwd.begin_ns = sync_end;
    bwd.end_ns = sync_end + (rt.rank() + 1) * kMs + step * 7 * kMs;  // the offset is the same on every rank
    sync.begin_ns = bwd.end_ns;
    sync.end_ns = sync_end = bwd.end_ns + 2 * kMs;
    // Rank 0's log "dropped" step 3's backward: that step is unknown on rank 0 only; its mean
    // over the other steps and every other rank's lag must be unaffected.
    if (rt.rank() == 0 && step == 3) {
      a.add({sync}, step, /*keep=*/true);
    } else {
      a.add({bwd, sync}, step, /*keep=*/step >= 2);  // 0: no predecessor; 1: warm-up
    }
  }
  ASSERT_EQ(a.kept(), 4);
  EXPECT_NEAR(a.mean_lag_ms(*comm), static_cast<double>(rt.size() - 1 - rt.rank()), 1e-9);
  // Nothing kept on any rank: 0 without a collective.
  EXPECT_EQ(perf::PeerArrival{}.mean_lag_ms(*comm), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Backends, PeerArrivalRanks, ::testing::Values("mpi", "ring", "naive"),
                         [](const ::testing::TestParamInfo<const char*>& p) { return std::string(p.param); });

}  // namespace
}  // namespace microddp
