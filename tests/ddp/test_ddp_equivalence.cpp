// test_ddp_equivalence.cpp — data-parallel training equals single-process training.
//
// Every rank trains with the strategy/backend under test on its share of each global batch; the
// reference is the same Trainer on MPI_COMM_SELF (one process, the whole global batch, no
// communication that could hide a bug). After 10 Adam steps the parameters must agree within
// 1e-5 relative (norm-wise: max |p - p_ref| <= 1e-5 * max |p_ref|): the only difference is the
// order in which per-rank partial sums are added (fp32 rounding ~1e-7 relative per step, and
// Adam's normalised updates keep that from growing much over 10 steps).
// Also: all ranks hold bitwise identical parameters; the same run twice is bitwise identical;
// gradient accumulation (K micro-steps) equals one step on the K-times larger batch.
// For `bucketed`, every check runs with several bucket plans of the small model (739 parameters,
// 2956 bytes, 8 tensors): one bucket, a few, one per parameter (weights larger than the cap), and
// a smaller first bucket.
//
// Arguments: --strategy=NAME (default naive) --backend=NAME (default mpi).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "comm/factory.hpp"
#include "comm/backends/mpi_backend.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "support/mpi_test_env.hpp"
#include "support/test_args.hpp"

namespace microddp::ddp {
namespace {

struct RunResult {
  std::vector<float> params;
  std::vector<double> losses;
};

struct SyncVariant {
  const char* what;
  GradSyncOptions options;
  int min_collectives, max_collectives;  // expected bucket count (checks the plan is the one meant)
};

constexpr double kByte = 1.0 / (1024.0 * 1024.0);  // one byte in MiB

std::vector<SyncVariant> sync_variants() {
  if (testing::test_arg("strategy", "naive") != "bucketed") return {{"default", {}, 1, 1000}};
  return {
      {"one bucket (25 MiB)", {25.0, 0.0}, 1, 1},
      {"a few buckets (1200 B)", {1200 * kByte, 0.0}, 3, 5},
      {"one per parameter (16 B: every weight exceeds the cap)", {16 * kByte, 0.0}, 8, 8},
      {"cap 200 B (one weight larger than the cap between small ones)", {200 * kByte, 0.0}, 5, 8},
      {"first bucket 16 B, then 1 MiB", {1.0, 16 * kByte}, 2, 2},
  };
}

TrainConfig small_config(std::int64_t global_batch) {
  TrainConfig c;
  c.model = model::MlpConfig{8, 16, 3, 3};
  c.global_batch = global_batch;
  c.steps = 10;
  c.seed = 11;
  c.strategy = parse_strategy(testing::test_arg("strategy", "naive"));
  return c;
}

RunResult run(const TrainConfig& cfg, comm::Communicator& comm) {
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(cfg, comm, *ops);
  t.setup();
  RunResult r;
  for (std::int64_t s = 0; s < cfg.steps; ++s) r.losses.push_back(t.step().loss);
  r.params.assign(t.model().param_data(), t.model().param_data() + t.model().flat_count());
  return r;
}

RunResult run_reference(TrainConfig cfg) {
  cfg.strategy = Strategy::Naive;
  comm::Communicator self(std::make_unique<comm::MpiBackend>(MPI_COMM_SELF));
  return run(cfg, self);
}

// max |a - b| <= tol * max |b|  (norm-wise relative difference, see the file comment)
void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  double max_diff = 0.0, max_ref = 0.0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::abs(a[i] - b[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::abs(b[i])));
  }
  EXPECT_LE(max_diff, tol * max_ref) << what;
}

class DdpEquivalence : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(DdpEquivalence, MatchesSingleProcessAfterTenAdamSteps) {
  const auto& rt = microddp::testing::runtime();
  auto comm = comm::make_communicator(testing::backend_arg(), rt);
  const RunResult ref = run_reference(small_config(GetParam()));
  for (const auto& v : sync_variants()) {
    SCOPED_TRACE(v.what);
    TrainConfig cfg = small_config(GetParam());
    cfg.sync_options = v.options;
    {
      auto ops = kernels::make_cpu_ops(1);
      Trainer probe(cfg, *comm, *ops);
      EXPECT_GE(probe.sync().collectives_per_step(), v.min_collectives);
      EXPECT_LE(probe.sync().collectives_per_step(), v.max_collectives);
    }
    const RunResult ddp = run(cfg, *comm);
    ASSERT_EQ(ddp.params.size(), ref.params.size());
    double max_diff = 0.0, max_ref = 0.0;
    for (std::size_t i = 0; i < ref.params.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::abs(ddp.params[i] - ref.params[i])));
      max_ref = std::max(max_ref, static_cast<double>(std::abs(ref.params[i])));
    }
    EXPECT_LE(max_diff, 1e-5 * max_ref) << "global batch " << cfg.global_batch << " on " << rt.size() << " ranks";
    for (std::size_t s = 0; s < ref.losses.size(); ++s) {
      EXPECT_NEAR(ddp.losses[s], ref.losses[s], 1e-5 * std::abs(ref.losses[s])) << "step " << s;
    }
    // Every rank holds the same bits.
    std::vector<float> root(ddp.params);
    MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
    EXPECT_EQ(std::memcmp(root.data(), ddp.params.data(), root.size() * sizeof(float)), 0)
        << "rank " << rt.rank() << " diverged from rank 0";
  }
}

// 8 divides by 1, 2 and 4; 7 and 13 divide by none of 2, 3, 4 (uneven shares).
INSTANTIATE_TEST_SUITE_P(GlobalBatches, DdpEquivalence, ::testing::Values(8, 7, 13));

TEST(DdpDeterminism, SameConfigTwiceIsBitwiseIdentical) {
  const auto& rt = microddp::testing::runtime();
  TrainConfig cfg = small_config(12);
  cfg.sync_options = sync_variants().back().options;
  auto comm = comm::make_communicator(testing::backend_arg(), rt);
  const RunResult a = run(cfg, *comm);
  const RunResult b = run(cfg, *comm);
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (std::size_t s = 0; s < a.losses.size(); ++s) EXPECT_EQ(a.losses[s], b.losses[s]) << "step " << s;
  EXPECT_EQ(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)), 0);
}

// K micro-steps of global batch B == one step of global batch K*B: micro-step k of step s uses
// global samples [(s*K + k)*B, ...), so the K micro-batches of step s are exactly the big batch s.
// Only the summation order differs (per rank and per micro-step), hence the 1e-5 tolerance.
TEST(DdpAccumulation, KMicroStepsEqualOneStepOnKTimesLargerBatch) {
  const auto& rt = microddp::testing::runtime();
  auto comm = comm::make_communicator(testing::backend_arg(), rt);
  constexpr std::int64_t kK = 3, kB = 5;  // 5 rows over 2..4 ranks: uneven shares too
  TrainConfig acc = small_config(kB);
  acc.accum_steps = kK;
  acc.sync_options = sync_variants().back().options;
  TrainConfig big = small_config(kK * kB);
  big.sync_options = acc.sync_options;
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(acc, *comm, *ops);
  t.setup();
  std::vector<double> losses;
  const std::uint64_t issued_before = comm->collectives_issued();
  for (std::int64_t s = 0; s < acc.steps; ++s) {
    losses.push_back(t.step().loss);
    // Only the last micro-step synchronises: exactly one step's worth of gradient collectives.
    std::int64_t colls = 0;
    for (const auto& e : t.events().events()) colls += e.kind == core::EventKind::Collective && e.step == s;
    EXPECT_EQ(colls, t.sync().collectives_per_step()) << "step " << s;
  }
  // Per step: the gradient collectives plus the scalar loss all-reduce, nothing else.
  EXPECT_EQ(comm->collectives_issued() - issued_before,
            static_cast<std::uint64_t>(acc.steps * (t.sync().collectives_per_step() + 1)));
  std::vector<float> params(t.model().param_data(), t.model().param_data() + t.model().flat_count());
  const RunResult ref = run(big, *comm);
  expect_close(params, ref.params, 1e-5, "accumulation vs big batch");
  for (std::size_t s = 0; s < ref.losses.size(); ++s)
    EXPECT_NEAR(losses[s], ref.losses[s], 1e-5 * std::abs(ref.losses[s])) << "step " << s;
}

TEST(DdpStartup, MismatchedConfigurationIsRefusedOnEveryRank) {
  const auto& rt = microddp::testing::runtime();
  if (rt.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  TrainConfig cfg = small_config(8);
  if (rt.rank() == rt.size() - 1) cfg.model.width = 17;  // one rank started with other options
  auto comm = comm::make_communicator(testing::backend_arg(), rt);
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(cfg, *comm, *ops);
  try {
    t.setup();
    FAIL() << "setup accepted mismatched configurations";
  } catch (const core::UsageError& e) {
    EXPECT_TRUE(e.agreed());
    EXPECT_NE(std::string(e.what()).find("width"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace microddp::ddp
