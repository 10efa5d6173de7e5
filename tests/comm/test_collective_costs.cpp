// test_collective_costs.cpp — the α-β-γ coefficients of the hand-rolled algorithms
// (comm/collective_costs.hpp) on cases computed by hand from the derivations in docs/allreduce.md
// and docs/sync_primitives.md. No MPI.
#include <gtest/gtest.h>

#include "comm/backend_description.hpp"
#include "comm/collective_costs.hpp"

namespace microddp::comm {
namespace {

using A = AllReduceAlgorithm;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kSegment = 4 * kMiB;

void expect_costs(const CostCoefficients& k, double alpha, double beta, double gamma) {
  EXPECT_DOUBLE_EQ(k.alpha, alpha);
  EXPECT_DOUBLE_EQ(k.beta, beta);
  EXPECT_DOUBLE_EQ(k.gamma, gamma);
}

TEST(CollectiveCosts, Rabenseifner) {
  // n = 8: 3 halving + 3 doubling steps; 2·7/8·S sent, 7/8·S reduced.
  expect_costs(all_reduce_cost(A::Rabenseifner, 8, 1000, kSegment), 6, 1750, 875);
  // n = 6: the 4-rank core (2 + 2 steps, 2·3/4·S, 3/4·S) plus the fold: 2 messages of S, one reduction.
  expect_costs(all_reduce_cost(A::Rabenseifner, 6, 1000, kSegment), 6, 1500 + 2000, 750 + 1000);
  // n = 2: one exchange of halves each way, like the ring.
  expect_costs(all_reduce_cost(A::Rabenseifner, 2, 1000, kSegment), 2, 1000, 500);
  expect_costs(all_reduce_cost(A::Ring, 2, 1000, kSegment), 2, 1000, 500);
}

TEST(CollectiveCosts, DoubleBinaryTree) {
  // n = 4, S = 8 MiB: halves of 4 MiB = 1 segment; D = 2 steps up and 2 down, each step two
  // children's 4 MiB: 4 latencies, 4·8 MiB sent, 2·8 MiB reduced.
  expect_costs(all_reduce_cost(A::DoubleBinaryTree, 4, 8 * kMiB, kSegment), 4, 32 * kMiB, 16 * kMiB);
  // n = 8, S = 64 MiB: K = 8 segments of 4 MiB per half, D = 3: 10 steps each way of 2·4 MiB.
  expect_costs(all_reduce_cost(A::DoubleBinaryTree, 8, 64 * kMiB, kSegment), 20, 20 * 8 * kMiB, 10 * 8 * kMiB);
  // n = 2: one child per rank: 1 step each way of S/2.
  expect_costs(all_reduce_cost(A::DoubleBinaryTree, 2, 1000, kSegment), 2, 1000, 500);
  EXPECT_EQ(double_binary_tree_depth(1), 0);
  EXPECT_EQ(double_binary_tree_depth(7), 2);
  EXPECT_EQ(double_binary_tree_depth(8), 3);
}

TEST(CollectiveCosts, TheOlderAlgorithms) {
  expect_costs(all_reduce_cost(A::Ring, 4, kMiB, kSegment), 6, 1.5 * kMiB, 0.75 * kMiB);
  expect_costs(all_reduce_cost(A::RecursiveDoubling, 8, 1000, kSegment), 3, 3000, 3000);
  expect_costs(all_reduce_cost(A::RecursiveDoubling, 6, 1000, kSegment), 4, 4000, 3000);
  expect_costs(all_reduce_cost(A::Naive, 3, 100, kSegment), 4, 400, 200);
  for (A a : {A::Ring, A::RecursiveDoubling, A::Naive, A::Rabenseifner, A::DoubleBinaryTree, A::Local}) {
    expect_costs(all_reduce_cost(a, 1, kMiB, kSegment), 0, 0, 0);  // one rank: nothing leaves it
  }
}

TEST(CollectiveCosts, Broadcasts) {
  // Binomial tree, n = 8, S = 16 MiB in 4 segments: the root sends each to 3 children.
  expect_costs(tree_broadcast_cost(8, 16 * kMiB, kSegment), 12, 48 * kMiB, 0);
  // Chain, n = 8, 4 segments: the last leaves the root at step 4 and crosses 6 more links.
  expect_costs(chain_broadcast_cost(8, 16 * kMiB, kSegment), 10, 10 * 4 * kMiB, 0);
  // One segment: the tree's ceil(log2 n) rounds against the chain's n - 1 hops.
  expect_costs(tree_broadcast_cost(5, 1000, kSegment), 3, 3000, 0);
  expect_costs(chain_broadcast_cost(5, 1000, kSegment), 4, 4000, 0);
  // Many segments: the chain's bandwidth term tends to S, the tree's stays ceil(log2 n)·S.
  const CostCoefficients chain = chain_broadcast_cost(8, 1024 * kMiB, kSegment);
  EXPECT_LT(chain.beta, 1.03 * 1024 * kMiB);
  EXPECT_DOUBLE_EQ(tree_broadcast_cost(8, 1024 * kMiB, kSegment).beta, 3 * 1024 * kMiB);
}

}  // namespace
}  // namespace microddp::comm
