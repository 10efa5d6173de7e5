// test_training_run.cpp — the training run as a library (run/training_run.hpp), without the command line:
//   * it trains what the trainer trains: every step's loss and the final parameters are bit for bit
//     those of a Trainer stepped by hand with the same configuration (the independent reference);
//   * a reporter added by the caller sees every step once, in order, and the run's end;
//   * --metrics as TrainingRunOptions: one start record, one record per step, one summary;
//   * checkpoints and resume: a run of 4 steps, resumed to 6, ends with the parameters of 6 steps in one
//     run; a resume of a finished run has nothing to do (no step, exit 0).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "comm/factory.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "run/run_reporter.hpp"
#include "run/training_run.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::run {
namespace {

ddp::TrainConfig small_config(std::int64_t steps) {
  ddp::TrainConfig cfg;
  cfg.model = model::MlpConfig{12, 16, 3, 3};
  cfg.global_batch = 10;
  cfg.steps = steps;
  return cfg;
}

// What a caller's reporter sees.
struct Seen {
  bool started = false;
  std::vector<std::int64_t> steps;
  std::vector<double> losses;
  int ends = 0;
  RunOutcome outcome;
};

class Recorder final : public RunReporter {
 public:
  explicit Recorder(Seen& seen) : seen_(seen) {}
  void on_start() override { seen_.started = true; }
  void on_step(const StepReport& s) override {
    seen_.steps.push_back(s.index);
    seen_.losses.push_back(s.record.loss);
  }
  void on_end(comm::Communicator& /*comm*/, const RunOutcome& o) override {
    ++seen_.ends;
    seen_.outcome = o;
  }

 private:
  Seen& seen_;
};

// One run through the library: a communicator and CPU ops of its own, the trainer built by the run's call.
int run_once(const TrainingRunOptions& o, const ddp::TrainConfig& cfg, Seen& seen, std::uint64_t* checksum) {
  const auto& rt = microddp::testing::runtime();
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  std::unique_ptr<ddp::Trainer> trainer;
  int code = 0;
  {
    TrainingRun run(rt, *comm, *ops, o, RunEnvironment{"mpi", 1, "1 (test)", ""});
    run.add_reporter(std::make_unique<Recorder>(seen));
    code = run.run(cfg, [&](const ddp::TrainConfig& c) -> ddp::Trainer& {
      trainer = std::make_unique<ddp::Trainer>(c, *comm, *ops);
      return *trainer;
    });
  }
  *checksum = trainer->param_checksum();
  return code;
}

// The reference: a Trainer stepped by hand.
std::uint64_t reference(const ddp::TrainConfig& cfg, std::vector<double>* losses) {
  const auto& rt = microddp::testing::runtime();
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  ddp::Trainer t(cfg, *comm, *ops);
  t.setup();
  for (std::int64_t s = 0; s < cfg.steps; ++s) losses->push_back(t.step().loss);
  return t.param_checksum();
}

std::string shared_dir(const std::string& name) {
  return ::testing::TempDir() + "microddp_run_" + name + "_np" + std::to_string(microddp::testing::runtime().size());
}

TEST(TrainingRun, TrainsWhatTheTrainerTrainsAndReports) {
  const auto& rt = microddp::testing::runtime();
  const std::string dir = shared_dir("plain");
  if (rt.rank() == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  MPI_Barrier(rt.world());
  TrainingRunOptions o;
  o.control.checkpoint_dir = dir + "/ck";
  o.metrics_path = dir + "/m.jsonl";
  Seen seen;
  std::uint64_t checksum = 0;
  ASSERT_EQ(run_once(o, small_config(4), seen, &checksum), 0);
  std::vector<double> want;
  EXPECT_EQ(checksum, reference(small_config(4), &want));
  EXPECT_TRUE(seen.started);
  EXPECT_EQ(seen.steps, (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(seen.losses, want);  // bit for bit
  EXPECT_EQ(seen.ends, 1);
  EXPECT_EQ(seen.outcome.steps_run, 4);
  EXPECT_EQ(seen.outcome.end, 4);
  EXPECT_EQ(seen.outcome.checksum, checksum);
  EXPECT_EQ(seen.outcome.first_loss, want.front());
  EXPECT_EQ(seen.outcome.last_loss, want.back());
  if (rt.rank() == 0) {
    std::ifstream f(o.metrics_path);
    std::vector<std::string> types;
    for (std::string line; std::getline(f, line);) {
      const auto at = line.find("\"type\":\"");
      ASSERT_NE(at, std::string::npos) << line;
      types.push_back(line.substr(at + 8, line.find('"', at + 8) - at - 8));
    }
    EXPECT_EQ(types, (std::vector<std::string>{"start", "step", "step", "step", "step", "summary"}));
  }
}

TEST(TrainingRun, ResumesWhereTheCheckpointLeftOff) {
  const auto& rt = microddp::testing::runtime();
  const std::string dir = shared_dir("resume");
  if (rt.rank() == 0) std::filesystem::remove_all(dir);
  MPI_Barrier(rt.world());
  TrainingRunOptions o;
  o.control.checkpoint_dir = dir;
  o.control.checkpoint_every = 2;
  Seen first, second, third;
  std::uint64_t c1 = 0, c2 = 0, c3 = 0;
  ASSERT_EQ(run_once(o, small_config(4), first, &c1), 0);
  o.control.resume = "auto";
  ASSERT_EQ(run_once(o, small_config(6), second, &c2), 0);
  EXPECT_EQ(second.steps, (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(second.outcome.steps_run, 2);
  std::vector<double> want;
  EXPECT_EQ(c2, reference(small_config(6), &want));
  EXPECT_EQ(second.losses, (std::vector<double>{want[4], want[5]}));
  // Finished: nothing to do, no reporter called.
  ASSERT_EQ(run_once(o, small_config(6), third, &c3), 0);
  EXPECT_FALSE(third.started);
  EXPECT_TRUE(third.steps.empty());
  EXPECT_EQ(c3, c2);
}

}  // namespace
}  // namespace microddp::run
