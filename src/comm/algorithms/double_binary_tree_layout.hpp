// double_binary_tree_layout.hpp — the two trees of the double binary tree all-reduce
// (double_binary_tree.cpp) as pure functions of (n, tree, rank): no MPI, unit-tested in
// tests/comm/algorithms/test_double_binary_tree_layout.cpp.
//
// One tree, on labels 1..n: the in-order binary tree of the labels' lowest set bit. Label x with
// lowest set bit L has children x - L/2 and x + m, m the largest of L/2, L/4, .., 1 with x + m <= n
// (a missing right subtree is cut to fit n); the root is the largest power of two <= n. Odd labels
// (L = 1) are the leaves, even labels the interior nodes, and the depth is floor(log2 n) edges.
// Two trees over the ranks: tree 0 gives rank r label r + 1; tree 1 mirrors it (label n - r) when
// n is even and shifts it by one (label r, rank 0 label n) when n is odd. So tree 0's leaves (even
// r) are tree 1's interior nodes and the other way round: every rank is interior (sends and
// receives on behalf of a subtree) in at most one tree, which is what lets both trees carry half
// the buffer each at full speed. For odd n rank 0 is a leaf in both.
// Contract: n >= 1, tree in {0, 1}, 0 <= rank < n; links are ranks, -1 for none; every rank but the
// root has one parent, and x is y's parent exactly when y is one of x's children.
#pragma once

namespace microddp::comm {

struct TreeLinks {
  int parent = -1;
  int children[2] = {-1, -1};  // the lower-labelled subtree first
};

namespace double_binary_tree_detail {

constexpr int lowbit(int x) { return x & -x; }

constexpr int label_of(int n, int tree, int rank) {
  if (tree == 0) return rank + 1;
  if (n % 2 == 0) return n - rank;
  return rank == 0 ? n : rank;
}

constexpr int rank_of(int n, int tree, int label) {
  if (tree == 0) return label - 1;
  if (n % 2 == 0) return n - label;
  return label == n ? 0 : label;
}

constexpr int root_label(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// Children of label x as labels, 0 for none.
constexpr void child_labels(int n, int x, int out[2]) {
  out[0] = out[1] = 0;
  const int half = lowbit(x) / 2;
  if (half == 0) return;
  out[0] = x - half;
  int m = half;
  while (m >= 1 && x + m > n) m /= 2;
  if (m >= 1) out[1] = x + m;
}

// Parent of label y, 0 for the root: walk down from the root (labels are in order).
constexpr int parent_label(int n, int y) {
  int x = root_label(n);
  while (x != y) {
    int c[2] = {0, 0};
    child_labels(n, x, c);
    const int next = y < x ? c[0] : c[1];
    if (next == y) return x;
    if (next == 0) return -1;  // not in the tree: a broken invariant, caught by the tests
    x = next;
  }
  return 0;
}

}  // namespace double_binary_tree_detail

constexpr TreeLinks double_binary_tree_links(int n, int tree, int rank) {
  namespace d = double_binary_tree_detail;
  TreeLinks links;
  const int x = d::label_of(n, tree, rank);
  const int parent = d::parent_label(n, x);
  if (parent > 0) links.parent = d::rank_of(n, tree, parent);
  int c[2] = {0, 0};
  d::child_labels(n, x, c);
  for (int i = 0; i < 2; ++i) links.children[i] = c[i] > 0 ? d::rank_of(n, tree, c[i]) : -1;
  return links;
}

}  // namespace microddp::comm
