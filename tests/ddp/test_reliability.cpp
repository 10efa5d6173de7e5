// test_reliability.cpp — the trainer's run-time guards, at 1, 2 and 3 ranks (docs/reliability.md):
//   * --clip-grad-norm: clipped N-rank training equals clipped single-process training (1e-5
//     relative, the DDP-vs-single-process tolerance of test_ddp_equivalence.cpp), and the clip
//     really engages (every step's norm is above the limit; the result differs from unclipped).
//   * --on-nan skip: a NaN injected on one rank at step k makes EVERY rank skip step k, and the
//     final parameters and optimizer state are bitwise equal to those of a run that never computed
//     step k (it jumps over that batch with restore_progress, the resume API): same world size,
//     same strategy, so bitwise is the contract. A run that did take step k must differ.
//   * --on-nan abort: every rank throws core::AgreedError at step k, naming the step and the ranks.
//   * divergence check: a bit flipped in one parameter on one rank is reported at the next check
//     on every rank, naming that parameter, the step and the rank; optimizer state and step count
//     are covered too; check_every = 0 still checks when asked (the end of `train`).
// Every run here also checks divergence after every step (check_every = 1): skipping, clipping
// and the verdicts keep all ranks bitwise identical.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "comm/factory.hpp"
#include "comm/backends/mpi_backend.hpp"
#include "core/error.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::ddp {
namespace {

TrainConfig small_config() {
  TrainConfig c;
  c.model = model::MlpConfig{8, 16, 3, 3};
  c.global_batch = 13;  // uneven shares over 2 and 3 ranks
  c.steps = 8;
  c.seed = 5;
  c.strategy = Strategy::Bucketed;
  c.sync_options = {200.0 / (1024.0 * 1024.0), 0.0};  // several buckets
  c.check_every = 1;
  return c;
}

// Steps `t` up to `steps` times; returns the message of the AgreedError that stopped it (every
// rank raises the same one), or "" when none did.
std::string steps_until_agreed_error(Trainer& t, std::int64_t steps) {
  try {
    for (std::int64_t s = 0; s < steps; ++s) t.step();
  } catch (const core::AgreedError& e) {
    return e.what();
  }
  return "";
}

struct RunResult {
  std::vector<float> params;
  std::vector<std::vector<float>> state;  // optimizer state buffers
  std::int64_t optimizer_steps = 0;
  std::vector<StepRecord> records;
};

RunResult snapshot(Trainer& t) {
  RunResult r;
  r.params.assign(t.model().param_data(), t.model().param_data() + t.model().flat_count());
  for (const auto& b : t.optimizer().state_buffers()) r.state.emplace_back(b.data, b.data + b.count);
  r.optimizer_steps = t.optimizer().steps_taken();
  return r;
}

// Trains cfg.steps steps; `jump_over` (1-based, 0 = none): that step's batch is never computed,
// the trainer continues after it as a resumed run would.
RunResult train(const TrainConfig& cfg, comm::Communicator& comm, std::int64_t jump_over = 0) {
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(cfg, comm, *ops);
  t.setup();
  std::vector<StepRecord> recs;
  while (t.steps_done() < cfg.steps) {
    if (t.steps_done() + 1 == jump_over) {
      t.restore_progress(t.steps_done() + 1);
      continue;
    }
    recs.push_back(t.step());
  }
  t.check_divergence();
  RunResult r = snapshot(t);
  r.records = recs;
  return r;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, static_cast<double>(std::abs(a[i] - b[i])));
  return d;
}

double max_abs(const std::vector<float>& a) {
  double m = 0.0;
  for (float x : a) m = std::max(m, static_cast<double>(std::abs(x)));
  return m;
}

// ---- gradient clipping -------------------------------------------------------------------------

class ClipGradNorm : public ::testing::TestWithParam<const char*> {};

TEST_P(ClipGradNorm, MatchesSingleProcessAndEngages) {
  const auto& rt = microddp::testing::runtime();
  TrainConfig cfg = small_config();
  cfg.optimizer.name = GetParam();
  cfg.optimizer.lr = cfg.optimizer.name == "sgd" ? 0.5f : 1e-2f;
  cfg.clip_grad_norm = 0.05f;  // the small model's gradient norm is ~0.1-1: clipped on every step
  RunResult ref;
  {
    TrainConfig one = cfg;
    one.strategy = Strategy::Naive;
    comm::Communicator self(std::make_unique<comm::MpiBackend>(MPI_COMM_SELF));
    ref = train(one, self);
  }
  for (const auto& rec : ref.records) {
    EXPECT_GT(rec.grad_norm, 1.5 * cfg.clip_grad_norm) << "step " << rec.step + 1 << ": the clip would not engage";
  }
  auto comm = comm::make_communicator("mpi", rt);
  const RunResult ddp = train(cfg, *comm);
  // 1e-5 norm-wise relative: as test_ddp_equivalence.cpp (only the order of partial sums differs;
  // the norm and factor inherit ~1e-7 relative differences).
  EXPECT_LE(max_abs_diff(ddp.params, ref.params), 1e-5 * max_abs(ref.params)) << rt.size() << " ranks";
  for (std::size_t s = 0; s < ref.records.size(); ++s) {
    EXPECT_NEAR(ddp.records[s].grad_norm, ref.records[s].grad_norm, 1e-5 * ref.records[s].grad_norm) << "step " << s;
    EXPECT_NEAR(ddp.records[s].loss, ref.records[s].loss, 1e-5 * ref.records[s].loss) << "step " << s;
  }
  // Clipping changed the result (so the comparison above is not one of two unclipped runs).
  TrainConfig unclipped = cfg;
  unclipped.clip_grad_norm = 0.0f;
  const RunResult plain = train(unclipped, *comm);
  const double min_effect = cfg.optimizer.name == "sgd" ? 1e-2 : 1e-6;  // Adam is nearly scale-invariant
  EXPECT_GT(max_abs_diff(plain.params, ddp.params), min_effect * max_abs(ref.params));
}

INSTANTIATE_TEST_SUITE_P(Optimizers, ClipGradNorm, ::testing::Values("sgd", "adam"));

// ---- NaN / Inf policy --------------------------------------------------------------------------

class OnNan : public ::testing::TestWithParam<bool> {};  // NaN in the gradient (true) or in the input

TEST_P(OnNan, SkipIsAgreedAndEqualsARunThatNeverSawTheBatch) {
  const auto& rt = microddp::testing::runtime();
  constexpr std::int64_t kBad = 4;  // 1-based step
  TrainConfig cfg = small_config();
  cfg.on_nan = NanPolicy::Skip;
  cfg.faults.arm({std::string(GetParam() ? trainer_fault_point::kNanGradient : trainer_fault_point::kNanInput),
                  rt.size() - 1, kBad, ""});
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(cfg, *comm, *ops);
  t.setup();
  for (std::int64_t s = 0; s < cfg.steps; ++s) {
    const StepRecord rec = t.step();
    EXPECT_EQ(rec.skipped, s + 1 == kBad) << "step " << s + 1 << " on rank " << rt.rank();
  }
  EXPECT_EQ(t.skipped_steps(), 1);
  EXPECT_EQ(t.optimizer().steps_taken(), cfg.steps - 1);  // Adam's step count did not advance
  const RunResult skipped = snapshot(t);

  TrainConfig clean = cfg;
  clean.faults = core::FaultPlan{};
  const RunResult reference = train(clean, *comm, /*jump_over=*/kBad);
  EXPECT_TRUE(bitwise_equal(skipped.params, reference.params))
      << "parameters differ from the run without step " << kBad;
  ASSERT_EQ(skipped.state.size(), reference.state.size());
  for (std::size_t i = 0; i < skipped.state.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(skipped.state[i], reference.state[i])) << "optimizer state " << i;
  }
  EXPECT_EQ(skipped.optimizer_steps, reference.optimizer_steps);
  // The reference is not trivially equal: a run that takes step kBad ends elsewhere.
  const RunResult full = train(clean, *comm);
  EXPECT_FALSE(bitwise_equal(full.params, reference.params));
}

TEST_P(OnNan, AbortStopsEveryRankAtThatStep) {
  const auto& rt = microddp::testing::runtime();
  TrainConfig cfg = small_config();
  cfg.faults.arm({std::string(GetParam() ? trainer_fault_point::kNanGradient : trainer_fault_point::kNanInput),
                  rt.size() - 1, 3, ""});
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(cfg, *comm, *ops);
  t.setup();
  const std::string what = steps_until_agreed_error(t, cfg.steps);
  EXPECT_EQ(t.steps_done(), 2) << "rank " << rt.rank() << " did not stop at step 3";
  EXPECT_EQ(t.optimizer().steps_taken(), 2);
  EXPECT_NE(what.find("non-finite values at step 3"), std::string::npos) << what;
  if (GetParam()) {  // only the injecting rank's gradient is bad: the message names exactly it
    const std::string ranks = "gradient non-finite on rank(s) " + std::to_string(rt.size() - 1) + " (";
    EXPECT_NE(what.find(ranks), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(InGradOrInput, OnNan, ::testing::Values(true, false));

// ---- divergence check --------------------------------------------------------------------------

TEST(Divergence, PeriodicCheckNamesParameterStepAndRank) {
  const auto& rt = microddp::testing::runtime();
  if (rt.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  TrainConfig cfg = small_config();
  cfg.check_every = 3;
  cfg.faults.arm({std::string(trainer_fault_point::kPerturbParameter), rt.size() - 1, 3, "layer_02.weight"});
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(cfg, *comm, *ops);
  t.setup();
  const std::string what = steps_until_agreed_error(t, cfg.steps);
  EXPECT_EQ(t.steps_done(), 3);
  const std::string want = "ranks diverged after step 3: layer_02.weight differs on rank(s) " +
                           std::to_string(rt.size() - 1) + " from rank 0";
  EXPECT_EQ(what, want);
}

TEST(Divergence, EndOfRunCheckWithCheckEveryZero) {
  const auto& rt = microddp::testing::runtime();
  if (rt.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  TrainConfig cfg = small_config();
  cfg.check_every = 0;
  cfg.faults.arm({std::string(trainer_fault_point::kPerturbParameter), 1, 2, "layer_01.weight"});
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(cfg, *comm, *ops);
  t.setup();
  for (std::int64_t s = 0; s < cfg.steps; ++s) t.step();  // no periodic check: no throw
  EXPECT_EQ(t.checks_done(), 0);
  try {
    t.check_divergence();
    FAIL() << "the end-of-run check missed a perturbed parameter";
  } catch (const core::AgreedError& e) {
    // The flip at step 2 spread through 6 more updates: a layer below may differ first; the
    // report names the first differing tensor in layer order and rank 1.
    EXPECT_NE(std::string(e.what()).find("after step 8: layer_0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank(s) 1 from rank 0"), std::string::npos) << e.what();
  }
}

TEST(Divergence, OptimizerStateAndStepCountAreChecked) {
  const auto& rt = microddp::testing::runtime();
  if (rt.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  TrainConfig cfg = small_config();
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(cfg, *comm, *ops);
  t.setup();
  t.step();
  t.step();
  const auto& bias = t.model().bias(1);
  if (rt.rank() == 1) t.optimizer().state_buffers()[1].data[bias.offset + 2] += 1e-7f;  // exp_avg_sq
  try {
    t.restore_progress(2);  // the resume-time check (same code)
    FAIL() << "exp_avg_sq difference not detected";
  } catch (const core::AgreedError& e) {
    EXPECT_NE(std::string(e.what()).find("layer_01.bias:exp_avg_sq differs on rank(s) 1 from rank 0"),
              std::string::npos)
        << e.what();
  }
  // Restore exactly (x + 1e-7 - 1e-7 need not be x): copy rank 0's buffer.
  auto sb = t.optimizer().state_buffers()[1];
  MPI_Bcast(sb.data, static_cast<int>(sb.count), MPI_FLOAT, 0, MPI_COMM_WORLD);
  t.restore_progress(2);  // agrees again
  if (rt.rank() == rt.size() - 1) t.optimizer().set_steps_taken(5);
  try {
    t.restore_progress(2);
    FAIL() << "step-count difference not detected";
  } catch (const core::AgreedError& e) {
    EXPECT_NE(std::string(e.what()).find("optimizer.steps differs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace microddp::ddp
