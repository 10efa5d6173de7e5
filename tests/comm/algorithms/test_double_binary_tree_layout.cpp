// test_double_binary_tree_layout.cpp — the two trees of the double binary tree all-reduce
// (comm/algorithms/double_binary_tree_layout.hpp) as pure functions: for every n up to 130, each
// tree is one tree over all ranks (one root, parents and children agree, every rank reached from the
// root), at most two children, depth floor(log2 n); and the trees are complementary: no rank is
// interior in both, and for even n every rank is interior in exactly one.
#include <gtest/gtest.h>

#include <vector>

#include "comm/algorithms/double_binary_tree_layout.hpp"
#include "comm/collective_costs.hpp"

namespace microddp::comm {
namespace {

bool interior(const TreeLinks& l) { return l.children[0] >= 0 || l.children[1] >= 0; }

TEST(DoubleBinaryTreeLayout, EachTreeSpansAllRanks) {
  for (int n = 1; n <= 130; ++n) {
    for (int tree = 0; tree < 2; ++tree) {
      int roots = 0, root = -1;
      std::vector<TreeLinks> links;
      for (int r = 0; r < n; ++r) links.push_back(double_binary_tree_links(n, tree, r));
      for (int r = 0; r < n; ++r) {
        const TreeLinks& l = links[static_cast<std::size_t>(r)];
        if (l.parent < 0) {
          ++roots;
          root = r;
        } else {
          ASSERT_LT(l.parent, n);
          const TreeLinks& p = links[static_cast<std::size_t>(l.parent)];
          EXPECT_TRUE(p.children[0] == r || p.children[1] == r) << "n=" << n << " tree " << tree << " rank " << r;
        }
        for (int c : l.children) {
          if (c < 0) continue;
          ASSERT_LT(c, n);
          EXPECT_EQ(links[static_cast<std::size_t>(c)].parent, r) << "n=" << n << " tree " << tree;
        }
      }
      ASSERT_EQ(roots, 1) << "n=" << n << " tree " << tree;
      // Every rank reached from the root, none twice; the deepest at floor(log2 n) edges.
      std::vector<int> depth(static_cast<std::size_t>(n), -1);
      std::vector<int> todo = {root};
      depth[static_cast<std::size_t>(root)] = 0;
      int reached = 0, deepest = 0;
      while (!todo.empty()) {
        const int x = todo.back();
        todo.pop_back();
        ++reached;
        deepest = std::max(deepest, depth[static_cast<std::size_t>(x)]);
        for (int c : links[static_cast<std::size_t>(x)].children) {
          if (c < 0) continue;
          ASSERT_EQ(depth[static_cast<std::size_t>(c)], -1) << "n=" << n << " rank " << c << " reached twice";
          depth[static_cast<std::size_t>(c)] = depth[static_cast<std::size_t>(x)] + 1;
          todo.push_back(c);
        }
      }
      EXPECT_EQ(reached, n) << "n=" << n << " tree " << tree;
      EXPECT_EQ(deepest, double_binary_tree_depth(n)) << "n=" << n << " tree " << tree;
    }
  }
}

TEST(DoubleBinaryTreeLayout, TheTreesAreComplementary) {
  for (int n = 2; n <= 130; ++n) {
    int leaf_in_both = 0;
    for (int r = 0; r < n; ++r) {
      const bool a = interior(double_binary_tree_links(n, 0, r)), b = interior(double_binary_tree_links(n, 1, r));
      EXPECT_FALSE(a && b) << "n=" << n << ": rank " << r << " is interior in both trees";
      if (!a && !b) ++leaf_in_both;
    }
    // Odd n: rank 0 only (label 1 in one tree, n in the other; both odd). n = 2^k + 1 and friends
    // have no other exception.
    EXPECT_EQ(leaf_in_both, n % 2 == 0 ? 0 : 1) << "n=" << n;
  }
}

TEST(DoubleBinaryTreeLayout, SmallCasesByHand) {
  // n = 4, tree 0 (labels r+1): root label 4 = rank 3, whose left child is label 2 = rank 1 with
  // children ranks 0 and 2. Tree 1 mirrors it (label 4 - r): root rank 0, child rank 2, leaves 3, 1.
  EXPECT_EQ(double_binary_tree_links(4, 0, 3).children[0], 1);
  EXPECT_EQ(double_binary_tree_links(4, 0, 3).children[1], -1);
  EXPECT_EQ(double_binary_tree_links(4, 0, 1).children[0], 0);
  EXPECT_EQ(double_binary_tree_links(4, 0, 1).children[1], 2);
  EXPECT_EQ(double_binary_tree_links(4, 1, 0).parent, -1);
  EXPECT_EQ(double_binary_tree_links(4, 1, 0).children[0], 2);
  EXPECT_EQ(double_binary_tree_links(4, 1, 2).children[0], 3);
  EXPECT_EQ(double_binary_tree_links(4, 1, 2).children[1], 1);
  // n = 5, tree 0: root label 4 (rank 3) has children label 2 (rank 1) and label 5 (rank 4), the
  // right subtree cut to fit.
  EXPECT_EQ(double_binary_tree_links(5, 0, 3).children[1], 4);
  EXPECT_EQ(double_binary_tree_links(5, 0, 4).parent, 3);
}

}  // namespace
}  // namespace microddp::comm
