// test_collectives.cpp — backend-generic exactness suite: every collective × sizes (0, 1, fewer than
// and not divisible by the ranks, 2^k - 1 / 2^k / 2^k + 1, 1000003) × ops × dtypes × in-place /
// out-of-place × roots, compared bitwise with closed forms (see collective_checks.hpp).
//
// The backend comes from the command line: `test_collectives [--backend=NAME]` (default mpi), built
// through comm::make_communicator, so every backend registers this same source (tests/comm/
// CMakeLists.txt shows how). Run it at any rank count; odd ones matter.
// Runtime budget: the 1000003-element size runs only for a subset of combinations (one dtype/op per
// collective, both in-place variants), which keeps np=5 on 2 oversubscribed cores within seconds.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "collective_checks.hpp"
#include "comm/factory.hpp"
#include "comm/backends/hand_rolled_backend.hpp"
#include "support/mpi_test_env.hpp"
#include "support/test_args.hpp"

namespace microddp::testing {
namespace {

class Collectives : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { comm_ = comm::make_communicator(backend_arg(), runtime(), comm_config()); }
  static void TearDownTestSuite() { comm_.reset(); }  // before MPI_Finalize in main
  static std::unique_ptr<Communicator> comm_;

  static int n() { return comm_->size(); }
  // Sizes for the full matrix: 2^4 and 2^10 neighbourhoods for every combination; 2^16 ones too.
  static std::vector<std::int64_t> counts() { return counts_for(n(), {4, 10, 16}); }
};

std::unique_ptr<Communicator> Collectives::comm_;

TEST_F(Collectives, AllReduce) { run_cases(*comm_, cases_for(CollectiveKind::AllReduce, n(), counts())); }
TEST_F(Collectives, Broadcast) { run_cases(*comm_, cases_for(CollectiveKind::Broadcast, n(), counts())); }
TEST_F(Collectives, Scatter) { run_cases(*comm_, cases_for(CollectiveKind::Scatter, n(), counts())); }
TEST_F(Collectives, Gather) { run_cases(*comm_, cases_for(CollectiveKind::Gather, n(), counts())); }
TEST_F(Collectives, AllGather) { run_cases(*comm_, cases_for(CollectiveKind::AllGather, n(), counts())); }
TEST_F(Collectives, ReduceScatter) { run_cases(*comm_, cases_for(CollectiveKind::ReduceScatter, n(), counts())); }

// f16 and bf16 exactly, on every backend this suite is registered for (`bench collectives --dtype
// half|bfloat16` checks its results with the same closed forms).
TEST_F(Collectives, SixteenBitFloats) {
  const std::vector<std::int64_t> counts = counts_for(n(), {4, 10});
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter, CollectiveKind::Broadcast,
                              CollectiveKind::Scatter, CollectiveKind::Gather, CollectiveKind::AllGather}) {
    run_cases(*comm_, cases_16bit(kind, n(), counts));
  }
}

TEST_F(Collectives, Barrier) {
  for (int i = 0; i < 3; ++i) comm_->barrier();
  comm_->barrier(comm::Mode::Async).wait();
}

// The large size: one representative combination per collective (both in-place variants; several
// roots where there is one), enough to cross every internal algorithm switch of MPI libraries.
TEST_F(Collectives, LargeCounts) {
  constexpr std::int64_t kLarge = 1000003;  // prime: divisible by no rank count
  const int last = n() - 1;
  std::vector<Case> cases;
  for (bool ip : {false, true}) {
    cases.push_back({CollectiveKind::AllReduce, DType::F32, ReduceOp::Sum, kLarge, ip, 0});
    cases.push_back({CollectiveKind::Scatter, DType::F32, ReduceOp::Sum, kLarge, ip, last});
    cases.push_back({CollectiveKind::Gather, DType::F32, ReduceOp::Sum, kLarge, ip, 0});
    cases.push_back({CollectiveKind::AllGather, DType::F32, ReduceOp::Sum, kLarge, ip, 0});
    cases.push_back({CollectiveKind::ReduceScatter, DType::F32, ReduceOp::Sum, kLarge, ip, 0});
  }
  cases.push_back({CollectiveKind::AllReduce, DType::F64, ReduceOp::Mean, kLarge, true, 0});
  cases.push_back({CollectiveKind::AllReduce, DType::I32, ReduceOp::Max, kLarge, false, 0});
  cases.push_back({CollectiveKind::ReduceScatter, DType::F64, ReduceOp::Min, kLarge, true, 0});
  cases.push_back({CollectiveKind::Broadcast, DType::F32, ReduceOp::Sum, kLarge, false, last});
  run_cases(*comm_, cases);
}

// The settings a registration puts in the environment (tests/comm/CMakeLists.txt: small segments and
// messages for collectives_p2p_small) reach the backend, or the small-segment runs would silently
// test the defaults. Read here straight from the environment, independently of the parser.
TEST_F(Collectives, EnvironmentSettingsReachTheBackend) {
  const auto* hand_rolled = comm_->backend_as<comm::HandRolledBackend>();
  if (hand_rolled == nullptr) GTEST_SKIP() << "settings of the hand-rolled backends";
  auto env_or = [](const char* name, std::int64_t fallback) -> std::int64_t {
    const char* v = std::getenv(name);
    return v == nullptr ? fallback : std::stoll(v);
  };
  const std::int64_t max_message = env_or("MICRODDP_P2P_MAX_MESSAGE_BYTES", comm::kDefaultP2pMaxMessageBytes);
  EXPECT_EQ(hand_rolled->max_message_bytes(), max_message);
  EXPECT_EQ(hand_rolled->segment_bytes(),
            std::min(env_or("MICRODDP_RING_SEGMENT_BYTES", comm::kDefaultRingSegmentBytes), max_message));
  EXPECT_EQ(hand_rolled->chain_broadcast_min_bytes(),
            env_or("MICRODDP_CHAIN_BROADCAST_MIN_BYTES", comm::kDefaultChainBroadcastMinBytes));
  if (hand_rolled->name() == "auto") {
    const comm::BackendDescription& d = hand_rolled->description();
    EXPECT_EQ(d.switch_bytes, env_or("MICRODDP_AUTO_RD_MAX_BYTES", comm::kDefaultAutoRdMaxBytes));
    auto env_scaled = [](const char* name, double fallback, double scale) {
      const char* v = std::getenv(name);
      return v == nullptr ? fallback : std::stod(v) * scale;
    };
    EXPECT_DOUBLE_EQ(d.link.alpha_s, env_scaled("MICRODDP_AUTO_ALPHA_US", comm::kDefaultAutoLink.alpha_s, 1e-6));
    EXPECT_DOUBLE_EQ(d.link.beta_s_per_byte,
                     env_scaled("MICRODDP_AUTO_BETA_NS_PER_BYTE", comm::kDefaultAutoLink.beta_s_per_byte, 1e-9));
    EXPECT_DOUBLE_EQ(d.link.gamma_s_per_byte,
                     env_scaled("MICRODDP_AUTO_GAMMA_NS_PER_BYTE", comm::kDefaultAutoLink.gamma_s_per_byte, 1e-9));
  }
}

// Every rank issued the same collectives, so the sequence numbers agree (docs/design.md, "Invariants").
TEST_F(Collectives, SequenceAgrees) { EXPECT_GT(expect_same_sequence_on_every_rank(*comm_), 0); }

}  // namespace
}  // namespace microddp::testing
