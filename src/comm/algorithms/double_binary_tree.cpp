// double_binary_tree.cpp — the double binary tree all-reduce (NCCL's "Tree" algorithm): two
// complementary binary trees (double_binary_tree_layout.hpp), each carrying half of the buffer,
// reduce up to their roots and broadcast back down, pipelined in segments.
//
// The buffer's two halves (even_part(count, 2, t)) travel in K segments of <= segment_bytes each.
// Reduce: every child's segments are received into scratch as they come (all receives posted up
// front); a rank adds segment k of its children to its own as soon as they are there and sends the
// sum to its parent at once, so segment k climbs while k+1 is on its way. Broadcast: the roots hold
// the result; every rank receives each segment from its parent straight into place and forwards it
// to its children. Segment k of tree 0 and of tree 1 are handled one after the other, so both trees
// are in flight together; since a rank is interior in at most one tree, its link carries about S
// bytes each way in each phase, whatever n.
// Cost (docs/allreduce.md): 2·(D + K - 1) steps of α + S/K·β (D = floor(log2 n) edges, c = 2
// children), i.e. ~2·S·β for many segments with 2·D·α of latency: log n instead of the ring's n - 1.
// Identical bits: each segment is summed on one path up its tree (children in label order around the
// rank's own value), completed at the root, and only copied on the way down.
// Scratch: one half per child per tree (at most 2 children in the tree where a rank is interior).
#include "comm/algorithms/double_binary_tree_layout.hpp"
#include "comm/algorithms/p2p_algorithms.hpp"
#include "comm/algorithms/ring_layout.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::comm {

using core::TensorView;

void double_binary_tree_all_reduce(P2pTransport& t, TensorView send, TensorView recv, core::ReduceOp op,
                                   std::int64_t segment_bytes) {
  const std::int64_t count = recv.count;
  const int n = t.size(), r = t.rank();
  if (count == 0) return;
  copy_unless_same(recv, send);
  if (n == 1) return;
  const std::int64_t es = elem_size(recv);
  const std::int64_t half_max = even_part(count, 2, 0).count;
  const std::int64_t K = ring_segments(half_max, es, segment_bytes);
  const TreeLinks links[2] = {double_binary_tree_links(n, 0, r), double_binary_tree_links(n, 1, r)};
  auto half = [&](int tree) {
    const IndexRange h = even_part(count, 2, tree);
    return recv.slice(h.begin, h.count);
  };
  auto segment = [&](const TensorView& v, std::int64_t k) {
    const IndexRange s = even_part(v.count, K, k);
    return v.slice(s.begin, s.count);
  };
  // Scratch slot of child c in tree `tree` (slots only for the children that exist).
  int slot_of[2][2] = {{-1, -1}, {-1, -1}};
  int slots = 0;
  for (int tree = 0; tree < 2; ++tree)
    for (int c = 0; c < 2; ++c)
      if (links[tree].children[c] >= 0) slot_of[tree][c] = slots++;
  char* scratch = t.scratch(slots * half_max * es);
  auto child_half = [&](int tree, int c) {
    return TensorView(scratch + slot_of[tree][c] * half_max * es, half(tree).count, recv.dtype);
  };
  auto at = [&](int tree, int c, std::int64_t k) { return static_cast<std::size_t>((tree * 2 + c) * K + k); };
  auto at_tree = [&](int tree, std::int64_t k) { return static_cast<std::size_t>(tree * K + k); };

  // Reduce up both trees.
  std::vector<MPI_Request>& from_children = t.pool(0, 4 * K);
  std::vector<MPI_Request>& to_parent = t.pool(1, 2 * K);
  for (int tree = 0; tree < 2; ++tree)
    for (int c = 0; c < 2; ++c)
      if (slot_of[tree][c] >= 0)
        for (std::int64_t k = 0; k < K; ++k) {
          const TensorView g = segment(child_half(tree, c), k);
          from_children[at(tree, c, k)] = t.irecv_one(g.data, g.bytes(), links[tree].children[c]);
        }
  for (std::int64_t k = 0; k < K; ++k) {
    for (int tree = 0; tree < 2; ++tree) {
      const TensorView mine = segment(half(tree), k);
      if (slot_of[tree][0] >= 0) {  // the lower-labelled subtree first, then this rank, then the higher
        P2pTransport::wait(from_children[at(tree, 0, k)]);
        kernels::host_reduce(mine, segment(child_half(tree, 0), k), mine, op);
      }
      if (slot_of[tree][1] >= 0) {
        P2pTransport::wait(from_children[at(tree, 1, k)]);
        kernels::host_reduce(mine, mine, segment(child_half(tree, 1), k), op);
      }
      if (links[tree].parent >= 0) to_parent[at_tree(tree, k)] = t.isend_one(mine.data, mine.bytes(), links[tree].parent);
    }
  }
  // The sums sent up are read from the places the broadcast receives into.
  for (auto& req : to_parent) P2pTransport::wait(req);

  // Broadcast down both trees.
  std::vector<MPI_Request>& from_parent = t.pool(2, 2 * K);
  std::vector<MPI_Request>& to_children = t.pool(3, 4 * K);
  for (int tree = 0; tree < 2; ++tree)
    if (links[tree].parent >= 0)
      for (std::int64_t k = 0; k < K; ++k) {
        const TensorView g = segment(half(tree), k);
        from_parent[at_tree(tree, k)] = t.irecv_one(g.data, g.bytes(), links[tree].parent);
      }
  for (std::int64_t k = 0; k < K; ++k) {
    for (int tree = 0; tree < 2; ++tree) {
      P2pTransport::wait(from_parent[at_tree(tree, k)]);  // the root's is MPI_REQUEST_NULL
      const TensorView g = segment(half(tree), k);
      for (int c = 0; c < 2; ++c)
        if (links[tree].children[c] >= 0)
          to_children[at(tree, c, k)] = t.isend_one(g.data, g.bytes(), links[tree].children[c]);
    }
  }
  for (auto& req : to_children) P2pTransport::wait(req);
}

}  // namespace microddp::comm
