// test_median.cpp — perf::median, the one median every benchmark and probe reports: odd and even
// counts (the mean of the two middle values), unsorted input, repeated values, one value, none (0).
#include <gtest/gtest.h>

#include <vector>

#include "perf/median.hpp"

namespace microddp::perf {
namespace {

TEST(Median, OddCountIsTheMiddleValueOfTheSortedSample) {
  EXPECT_EQ(median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_EQ(median({9.0, 2.0, 2.0, 7.0, 1.0}), 2.0);
}

TEST(Median, EvenCountIsTheMeanOfTheTwoMiddleValues) {
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(median({10.0, 0.0}), 5.0);
}

TEST(Median, OneSlowRepetitionDoesNotMoveIt) { EXPECT_EQ(median({1.0, 1.0, 1000.0}), 1.0); }

TEST(Median, OneValueAndNone) {
  EXPECT_EQ(median({7.5}), 7.5);
  EXPECT_EQ(median({}), 0.0);
}

}  // namespace
}  // namespace microddp::perf
