// test_lab_rows.cpp — how the course's labs plug in (src/labs/register_labs.hpp): register_labs()
// adds their rows to the strategy and backend tables, after the production rows and in the order
// the help lists them, once however often it is called; each lab strategy is modelled as the
// production strategy whose collectives it issues, refuses --shard (and labs 04 and 09 compression),
// only lab 09 brings its own optimizer update (the student's ZeRO-1 steps its shard), each lab
// backend is described as the all-reduce it runs (lab-hier: the hierarchical one, lab 11), and lab 10's
// compression row is lossy and reads the PowerSGD settings, like the production mode it stands beside.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/factory.hpp"
#include "ddp/compression/compression_config.hpp"
#include "ddp/strategy.hpp"
#include "labs/lab_powersgd.hpp"
#include "labs/lab_strategies.hpp"
#include "labs/register_labs.hpp"

namespace microddp::labs {
namespace {

TEST(LabRows, RegisteredOnceAfterTheProductionRows) {
  register_labs();
  register_labs();  // the program and a grader may both call it
  EXPECT_EQ(ddp::strategy_choices(), "naive, flat, overlap, bucketed, lab, lab-overlap, lab-bucketed, lab-zero1");
  const std::vector<std::string> backends = comm::available_backends();
  ASSERT_GE(backends.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(backends.end() - 4, backends.end()),
            (std::vector<std::string>{"lab-naive", "lab-ring", "lab-sync", "lab-hier"}));
}

TEST(LabRows, StrategiesAreTheirProductionStrategyWithTheStudentsPart) {
  const LabStrategies& lab = lab_strategies();
  for (const ddp::Strategy s : {lab.naive_dp, lab.overlap, lab.bucketed}) {
    EXPECT_EQ(ddp::parse_strategy(ddp::strategy_name(s)), s);
    EXPECT_NE(ddp::strategy_row(s).make, nullptr);  // the student's part
    EXPECT_FALSE(ddp::strategy_row(s).graph_obstacle.empty());  // the student's host code runs every step
    EXPECT_NE(ddp::strategy_description(s).find("lab 0"), std::string_view::npos) << ddp::strategy_name(s);
    EXPECT_EQ(ddp::strategy_row(s).no_shard, "a course lab, docs/labs");
    EXPECT_EQ(ddp::strategy_row(s).make_update, nullptr) << ddp::strategy_name(s);
  }
  EXPECT_EQ(ddp::strategy_name(lab.naive_dp), "lab");
  // Each row's plan is its production strategy's (ZeRO, the step model and analyze read it).
  EXPECT_EQ(ddp::strategy_row(lab.naive_dp).plan, ddp::strategy_row(ddp::Strategy::Naive).plan);
  EXPECT_FALSE(ddp::is_async(lab.naive_dp));
  EXPECT_EQ(ddp::strategy_row(lab.naive_dp).no_compression, "lab 04");
  EXPECT_EQ(ddp::strategy_row(lab.overlap).plan, ddp::strategy_row(ddp::Strategy::Overlap).plan);
  EXPECT_TRUE(ddp::is_async(lab.overlap));
  EXPECT_TRUE(ddp::strategy_row(lab.overlap).no_compression.empty());
  EXPECT_EQ(ddp::strategy_row(lab.bucketed).plan, ddp::strategy_row(ddp::Strategy::Bucketed).plan);
  EXPECT_TRUE(ddp::strategy_row(lab.bucketed).reads_bucket_caps);
  EXPECT_TRUE(ddp::is_async(lab.bucketed));
}

TEST(LabRows, Zero1IsFlatWithTheStudentsShardedUpdate) {
  const LabStrategies& lab = lab_strategies();
  EXPECT_EQ(ddp::parse_strategy("lab-zero1"), lab.zero1);
  // Reduce-scatter + all-gather of the whole buffer = one all-reduce's bytes: flat's plan.
  EXPECT_EQ(ddp::strategy_row(lab.zero1).plan, ddp::strategy_row(ddp::Strategy::Flat).plan);
  EXPECT_FALSE(ddp::is_async(lab.zero1));
  EXPECT_NE(ddp::strategy_description(lab.zero1).find("lab 09"), std::string_view::npos);
  EXPECT_NE(ddp::strategy_row(lab.zero1).no_shard.find("shards the optimizer state itself"), std::string_view::npos);
  EXPECT_EQ(ddp::strategy_row(lab.zero1).no_compression, "lab 09");
  EXPECT_NE(ddp::strategy_row(lab.zero1).make_update, nullptr);
  for (const ddp::Strategy s : ddp::kStrategies) EXPECT_EQ(ddp::strategy_row(s).make_update, nullptr);
}

TEST(LabRows, PowerSgdIsACompressionModeAfterTheProductionOnes) {
  register_labs();
  register_labs();
  const auto modes = ddp::compression_modes();
  ASSERT_EQ(modes.size(), 5u);
  EXPECT_EQ(modes.back().name, "lab-powersgd");
  const ddp::CompressionMode lab = lab_powersgd_mode();
  EXPECT_EQ(lab, modes.back().mode);
  EXPECT_EQ(ddp::parse_compression_mode("lab-powersgd"), lab);
  EXPECT_EQ(ddp::compression_mode_name(lab), "lab-powersgd");
  const ddp::CompressionModeRow& row = ddp::compression_mode_row(lab);
  const ddp::CompressionModeRow& production = ddp::compression_mode_row(ddp::CompressionMode::PowerSgd);
  EXPECT_EQ(row.lossy, production.lossy);
  EXPECT_EQ(row.powersgd_settings, production.powersgd_settings);
  EXPECT_NE(row.help.find("lab 10"), std::string_view::npos);
  EXPECT_NE(row.make, nullptr);
}

TEST(LabRows, BackendsAreDescribedAsTheAllReduceTheyRun) {
  register_labs();
  using A = comm::AllReduceAlgorithm;
  const struct {
    const char* name;
    A algorithm;
  } rows[] = {{"lab-naive", A::Naive}, {"lab-ring", A::Ring}, {"lab-sync", A::Ring}, {"lab-hier", A::Hierarchical}};
  for (const auto& r : rows) {
    const comm::BackendDescription d = comm::describe_backend(r.name);
    EXPECT_TRUE(d.compiled_in) << r.name;
    EXPECT_EQ(d.kind, comm::BackendKind::Host) << r.name;
    EXPECT_FALSE(d.accepts_device_buffers) << r.name;
    EXPECT_EQ(d.all_reduce_algorithm(1 << 20, 4), r.algorithm) << r.name;
  }
}

}  // namespace
}  // namespace microddp::labs
