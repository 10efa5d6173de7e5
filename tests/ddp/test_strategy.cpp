// test_strategy.cpp — the strategy table: names round-trip, an unknown name is a usage error naming
// its source and every choice, which strategies overlap backward, each production row's plan, and a
// row registered at start-up (as the course's labs add theirs: tests/labs/test_lab_rows.cpp, or a
// newcomer's strategy: one plan function and one row) is parsed, listed, planned and built like the
// production ones.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/error.hpp"
#include "ddp/compression/compression_config.hpp"
#include "ddp/zero/shard_plan.hpp"
#include "model/param_layout.hpp"
#include "ddp/strategy.hpp"

namespace microddp::ddp {
namespace {

TEST(Strategy, NamesRoundTripInTheListedOrder) {
  std::set<std::string> seen;
  for (const Strategy s : kStrategies) {
    const std::string name(strategy_name(s));
    EXPECT_TRUE(seen.insert(name).second) << name << " spelt twice";
    EXPECT_EQ(parse_strategy(name), s);
    EXPECT_FALSE(strategy_description(s).empty()) << name;
    EXPECT_NE(strategy_row(s).plan, nullptr) << name;
    EXPECT_EQ(strategy_row(s).make, nullptr) << name;             // a production row is a PlannedSync
    EXPECT_TRUE(strategy_row(s).graph_obstacle.empty()) << name;  // and can be replayed as a graph
    EXPECT_TRUE(strategy_row(s).no_shard.empty() && strategy_row(s).no_compression.empty()) << name;
  }
  EXPECT_EQ(strategy_choices().rfind("naive, flat, overlap, bucketed", 0), 0u) << strategy_choices();
}

TEST(Strategy, UnknownNameNamesItsSourceAndTheChoices) {
  try {
    parse_strategy("telepathy", "--strategy");
    FAIL() << "no error";
  } catch (const core::UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown --strategy 'telepathy'"), std::string::npos) << what;
    EXPECT_NE(what.find("naive, flat, overlap, bucketed"), std::string::npos) << what;
  }
  EXPECT_THROW(parse_strategy("Bucketed"), core::UsageError);  // one spelling: case matters
  EXPECT_THROW(parse_strategy(""), core::UsageError);
}

TEST(Strategy, OnlyOverlapAndBucketedAreAsync) {
  EXPECT_FALSE(is_async(Strategy::Naive));
  EXPECT_FALSE(is_async(Strategy::Flat));
  EXPECT_TRUE(is_async(Strategy::Overlap));
  EXPECT_TRUE(is_async(Strategy::Bucketed));
}

// Whether a CUDA graph can replay a step is asked of each part's row (ddp/step_graph.hpp): the
// production strategies can be replayed, a row that does not say so cannot (a lab runs host code),
// nor can a compressed or a sharded step.
TEST(Strategy, GraphEligibilityIsEachRowsAnswer) {
  for (const Strategy s : kStrategies) EXPECT_TRUE(strategy_row(s).graph_obstacle.empty()) << strategy_name(s);
  EXPECT_FALSE(StrategyRow{}.graph_obstacle.empty());  // a row must say that a replay can run it
  for (const CompressionModeRow& row : compression_modes()) {
    EXPECT_EQ(row.graph_obstacle.empty(), row.mode == CompressionMode::None) << row.name;
  }
  EXPECT_TRUE(zero::shard_graph_obstacle(zero::ShardMode::None).empty());
  EXPECT_FALSE(zero::shard_graph_obstacle(zero::ShardMode::Optimizer).empty());
  EXPECT_FALSE(zero::shard_graph_obstacle(zero::ShardMode::Gradients).empty());
}

// A small layout: 3 parameters, the second ending off the 256-byte alignment.
std::vector<model::ParamInfo> three_params() {
  model::MlpConfig config;
  config.width = 8;
  config.depth = 1;
  config.in_dim = 8;
  config.classes = 3;
  return model::param_layout(config);
}

TEST(Strategy, EachProductionRowsPlan) {
  const auto params = three_params();
  const std::int64_t flat = model::flat_count(params);
  const GradSyncOptions options{.bucket_mb = 1e-9, .first_bucket_mb = 0};  // one byte: a bucket per parameter
  for (const Strategy s : {Strategy::Naive, Strategy::Overlap}) {
    const auto plan = strategy_plan(s, params, flat, options);
    ASSERT_EQ(plan.size(), params.size()) << strategy_name(s);
    for (std::size_t i = 0; i < plan.size(); ++i) {
      EXPECT_EQ(plan[i].offset, params[i].offset);
      EXPECT_EQ(plan[i].count, params[i].count);
    }
  }
  const auto flat_plan = strategy_plan(Strategy::Flat, params, flat, options);
  ASSERT_EQ(flat_plan.size(), 1u);
  EXPECT_EQ(flat_plan[0].offset, 0);
  EXPECT_EQ(flat_plan[0].count, flat);  // trailing padding included: the whole buffer
  EXPECT_EQ(flat_plan[0].num_params(), static_cast<int>(params.size()));
  EXPECT_EQ(strategy_plan(Strategy::Bucketed, params, flat, options).size(), params.size());
  EXPECT_EQ(strategy_plan(Strategy::Bucketed, params, flat, GradSyncOptions{}).size(), 1u);  // 25 MiB: one
  EXPECT_THROW(strategy_plan(Strategy::Bucketed, params, flat, GradSyncOptions{.bucket_mb = 0}), core::UsageError);
  EXPECT_TRUE(strategy_row(Strategy::Bucketed).reads_bucket_caps);
  for (const Strategy s : {Strategy::Naive, Strategy::Flat, Strategy::Overlap})
    EXPECT_FALSE(strategy_row(s).reads_bucket_caps) << strategy_name(s);
}

// A newcomer's strategy (docs/design.md, "Adding a strategy"): one plan function, one row. Here: two
// buckets, the output layer's gradients first, the rest after, launched during backward.
std::vector<Bucket> two_buckets(const std::vector<model::ParamInfo>& params, std::int64_t flat_count,
                                const GradSyncOptions&) {
  std::vector<Bucket> plan = plan_one_bucket(params, flat_count);
  const Bucket all = plan[0];
  plan[0].end_param = 2;
  plan[0].count = params[2].offset;
  plan.push_back(Bucket{1, 2, all.end_param, params[2].offset, flat_count - params[2].offset});
  return plan;
}

// A row added at start-up: the next index, listed after the production rows, its plan used.
TEST(Strategy, ARegisteredRowIsARowLikeTheOthers) {
  const std::size_t before = all_strategies().size();
  const Strategy mine = register_strategy({.name = "two-buckets",
                                           .description = "two async all-reduces, the output layer's first",
                                           .plan = &two_buckets,
                                           .launch = Launch::DuringBackward,
                                           .no_shard = "a test row"});
  EXPECT_EQ(mine.index(), before);
  EXPECT_EQ(all_strategies().back(), mine);
  EXPECT_EQ(parse_strategy("two-buckets"), mine);
  EXPECT_EQ(strategy_name(mine), "two-buckets");
  EXPECT_TRUE(is_async(mine));
  EXPECT_EQ(strategy_row(mine).no_shard, "a test row");
  EXPECT_NE(strategy_choices().find(", two-buckets"), std::string::npos) << strategy_choices();
  for (const Strategy s : kStrategies) EXPECT_NE(s, mine);

  // Its plan is what its sync (a PlannedSync: no maker), ZeRO and the step model read.
  EXPECT_EQ(strategy_row(mine).make, nullptr);
  const auto params = three_params();
  const auto plan = strategy_plan(mine, params, model::flat_count(params), GradSyncOptions{});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].num_params() + plan[1].num_params(), static_cast<int>(params.size()));
  EXPECT_EQ(plan[1].offset + plan[1].count, model::flat_count(params));

  // One row per name; a row needs a plan.
  EXPECT_THROW(register_strategy(strategy_row(mine)), core::Error);
  StrategyRow no_plan = strategy_row(mine);
  no_plan.name = "test-no-plan";
  no_plan.plan = nullptr;
  EXPECT_THROW(register_strategy(no_plan), core::Error);
}

}  // namespace
}  // namespace microddp::ddp
