// test_strategy.cpp — the strategies' one spelling: names round-trip, an unknown name is a usage
// error naming its source and every choice, and which strategies overlap backward.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/error.hpp"
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
  }
  EXPECT_EQ(strategy_choices(), "naive, flat, overlap, bucketed, lab, lab-overlap, lab-bucketed");
}

TEST(Strategy, LabStrategiesAreTheirProductionStrategyWithTheStudentsPart) {
  for (const Strategy s : kLabStrategies) {
    EXPECT_EQ(parse_strategy(strategy_name(s)), s);
    EXPECT_TRUE(is_lab(s));
    EXPECT_FALSE(is_lab(modelled_as(s)));
    EXPECT_NE(strategy_description(s).find("lab 0"), std::string_view::npos) << strategy_name(s);
  }
  EXPECT_EQ(modelled_as(Strategy::Lab), Strategy::Naive);
  EXPECT_FALSE(is_async(Strategy::Lab));
  EXPECT_EQ(modelled_as(Strategy::LabOverlap), Strategy::Overlap);
  EXPECT_EQ(modelled_as(Strategy::LabBucketed), Strategy::Bucketed);
  for (const Strategy s : kStrategies) EXPECT_EQ(modelled_as(s), s);
  EXPECT_TRUE(is_async(Strategy::LabOverlap));
  EXPECT_TRUE(is_async(Strategy::LabBucketed));
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

}  // namespace
}  // namespace microddp::ddp
