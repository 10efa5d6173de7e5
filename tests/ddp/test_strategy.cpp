// test_strategy.cpp — the strategy table: names round-trip, an unknown name is a usage error naming
// its source and every choice, which strategies overlap backward, and a row registered at start-up
// (as the course's labs add theirs: tests/labs/test_lab_rows.cpp) is parsed, listed, modelled and
// built like the production ones.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/error.hpp"
#include "ddp/flat_sync.hpp"
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
    EXPECT_EQ(modelled_as(s), s) << name;  // a production row is modelled as itself
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

// A row added at start-up: the next index, listed after the production rows, its maker used.
TEST(Strategy, ARegisteredRowIsARowLikeTheOthers) {
  const std::size_t before = all_strategies().size();
  const Strategy mine = register_strategy(
      {"test-flat", "flat under another name", false, Strategy::Flat,
       [](Strategy, comm::Communicator& comm, const std::vector<model::ParamInfo>& params, core::TensorView grads,
          core::EventLog& events, const GradSyncOptions&) -> std::unique_ptr<GradSync> {
         return std::make_unique<FlatSync>(comm, params, grads, events);
       },
       "a test row"});
  EXPECT_EQ(mine.index(), before);
  EXPECT_EQ(all_strategies().back(), mine);
  EXPECT_EQ(parse_strategy("test-flat"), mine);
  EXPECT_EQ(strategy_name(mine), "test-flat");
  EXPECT_EQ(modelled_as(mine), Strategy::Flat);
  EXPECT_FALSE(is_async(mine));
  EXPECT_EQ(strategy_row(mine).no_shard, "a test row");
  EXPECT_NE(strategy_choices().find(", test-flat"), std::string::npos) << strategy_choices();
  for (const Strategy s : kStrategies) EXPECT_NE(s, mine);
  // One row per name; a registered row is modelled as a production strategy.
  EXPECT_THROW(register_strategy(strategy_row(mine)), core::Error);
  StrategyRow self_modelled = strategy_row(mine);
  self_modelled.name = "test-self";
  self_modelled.modelled_as = mine;
  EXPECT_THROW(register_strategy(self_modelled), core::Error);
}

}  // namespace
}  // namespace microddp::ddp
