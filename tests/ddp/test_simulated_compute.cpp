// test_simulated_compute.cpp — --simulate-compute-ms (ddp/simulated_compute.hpp), at 1 and 2 ranks:
//   * the per-layer shares are proportional to the layers' parameters (a float64 reference) and add
//     up to the total exactly;
//   * the sleep happens: every backward of a simulated run lasts at least the total (a sleep never
//     ends early, and the overshoot bookkeeping never takes off more than was overslept);
//   * numerics untouched: every strategy (and accumulation) gives bitwise the same losses, gradient
//     norms and parameters with and without it (same strategy, backend and world size: the bitwise
//     contract of docs/design.md);
//   * bad values (negative, NaN, infinite, above the 10 s limit) are refused with one clear error;
//   * ranks must agree on it: a rank with another value is refused at start-up, on every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "comm/factory.hpp"
#include "core/error.hpp"
#include "ddp/simulated_compute.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::ddp {
namespace {

TrainConfig small_config() {
  TrainConfig c;
  c.model = model::MlpConfig{8, 16, 3, 3};  // layers of 144, 272, 272 and 51 parameters
  c.global_batch = 13;                      // uneven shares over 2 ranks
  c.steps = 4;
  c.seed = 5;
  c.sync_options = {200.0 / (1024.0 * 1024.0), 0.0};  // several buckets
  return c;
}

TEST(SimulatedCompute, SharesFollowTheParameters) {
  auto ops = kernels::make_cpu_ops(1);
  const model::FullMLP m(small_config().model, 4, *ops);
  const double total_ms = 7.0;
  const SimulatedCompute sim(m, total_ms);
  ASSERT_TRUE(sim.active());
  std::int64_t sum = 0;
  for (int l = 0; l < m.num_layers(); ++l) {
    const double params = static_cast<double>(m.weight(l).count + m.bias(l).count);
    const double want_ns = total_ms * 1e6 * params / static_cast<double>(m.parameter_count());
    EXPECT_NEAR(static_cast<double>(sim.share_ns(l)), want_ns, 1.0) << "layer " << l;  // rounding: < 1 ns
    sum += sim.share_ns(l);
  }
  EXPECT_EQ(sum, 7'000'000);
  EXPECT_FALSE(SimulatedCompute(m, 0.0).active());
}

struct RunResult {
  std::vector<StepRecord> records;
  std::vector<float> params;
  double min_backward_ms = 1e300;  // shortest backward event of any step (micro-steps included)
};

RunResult train(const TrainConfig& cfg) {
  const auto& rt = microddp::testing::runtime();
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(cfg, *comm, *ops);
  t.setup();
  RunResult r;
  for (std::int64_t s = 0; s < cfg.steps; ++s) {
    r.records.push_back(t.step());
    for (const auto& e : t.events().events()) {
      if (e.kind == core::EventKind::Backward) {
        r.min_backward_ms = std::min(r.min_backward_ms, static_cast<double>(e.end_ns - e.begin_ns) * 1e-6);
      }
    }
  }
  r.params.assign(t.model().param_data(), t.model().param_data() + t.model().flat_count());
  return r;
}

TEST(SimulatedCompute, SameBitsEveryStrategy) {
  const float ms = 2.0f;  // 4 layers: 0.39 to 0.74 ms each
  for (const Strategy s : {Strategy::Naive, Strategy::Flat, Strategy::Overlap, Strategy::Bucketed}) {
    for (const std::int64_t accum : {std::int64_t{1}, std::int64_t{2}}) {
      if (accum == 2 && s != Strategy::Bucketed) continue;  // one accumulating case: each micro-step sleeps
      TrainConfig cfg = small_config();
      cfg.strategy = s;
      cfg.accum_steps = accum;
      const RunResult plain = train(cfg);
      cfg.simulate_compute_ms = ms;
      const RunResult simulated = train(cfg);
      const std::string what = std::string(strategy_name(s)) + " accum " + std::to_string(accum);
      ASSERT_EQ(plain.records.size(), simulated.records.size());
      for (std::size_t i = 0; i < plain.records.size(); ++i) {
        EXPECT_EQ(std::memcmp(&plain.records[i].loss, &simulated.records[i].loss, sizeof(double)), 0)
            << what << " step " << i + 1 << ": " << plain.records[i].loss << " vs " << simulated.records[i].loss;
        EXPECT_EQ(std::memcmp(&plain.records[i].grad_norm, &simulated.records[i].grad_norm, sizeof(double)), 0)
            << what << " step " << i + 1;
      }
      ASSERT_EQ(plain.params.size(), simulated.params.size());
      EXPECT_EQ(std::memcmp(plain.params.data(), simulated.params.data(), plain.params.size() * sizeof(float)), 0)
          << what;
      // The sleep really happened, in every backward (each micro-step's too).
      EXPECT_GE(simulated.min_backward_ms, static_cast<double>(ms)) << what;
    }
  }
}

TEST(SimulatedCompute, BadValuesAreRefused) {
  const auto& rt = microddp::testing::runtime();
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  for (const float bad : {-1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          static_cast<float>(kMaxSimulateComputeMs) * 1.001f}) {
    TrainConfig cfg = small_config();
    cfg.simulate_compute_ms = bad;
    try {
      Trainer t(cfg, *comm, *ops);
      ADD_FAILURE() << "--simulate-compute-ms " << bad << " accepted";
    } catch (const core::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--simulate-compute-ms must be a finite number of milliseconds in [0, 10000]"),
                std::string::npos)
          << e.what();
    }
  }
  TrainConfig limit = small_config();
  limit.simulate_compute_ms = static_cast<float>(kMaxSimulateComputeMs);
  EXPECT_NO_THROW(Trainer(limit, *comm, *ops));  // the limit itself is allowed (not run: 10 s a step)
}

TEST(SimulatedCompute, RanksMustAgree) {
  const auto& rt = microddp::testing::runtime();
  if (rt.size() < 2) GTEST_SKIP() << "agreement needs 2 ranks";
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  {
    TrainConfig same = small_config();
    same.simulate_compute_ms = 0.5f;
    Trainer t(same, *comm, *ops);
    EXPECT_NO_THROW(t.setup());
  }
  TrainConfig cfg = small_config();
  if (rt.rank() == rt.size() - 1) cfg.simulate_compute_ms = 0.5f;
  Trainer t(cfg, *comm, *ops);
  try {
    t.setup();
    ADD_FAILURE() << "ranks with different --simulate-compute-ms started";
  } catch (const core::UsageError& e) {
    EXPECT_TRUE(e.agreed());
    const std::string want = "configuration mismatch: rank " + std::to_string(rt.size() - 1) +
                             " has simulate_compute_ms = 0.5 but rank 0 has 0";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace microddp::ddp
