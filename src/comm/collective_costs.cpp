// collective_costs.cpp — the α-β-γ coefficients of the hand-rolled algorithms (collective_costs.hpp).
#include "comm/collective_costs.hpp"

#include "comm/backend_description.hpp"

#include <algorithm>
#include <cmath>

namespace microddp::comm {

namespace {

int floor_log2(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return k;
}

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// Segments of a pipeline carrying `bytes`: at least one (a message of 0 bytes is still a step).
double segments(double bytes, double segment_bytes) { return std::max(1.0, std::ceil(bytes / segment_bytes)); }

}  // namespace

int double_binary_tree_depth(int ranks) { return ranks <= 1 ? 0 : floor_log2(ranks); }

CostCoefficients all_reduce_cost(AllReduceAlgorithm algorithm, int ranks, double bytes, double segment_bytes) {
  if (ranks <= 1 || algorithm == AllReduceAlgorithm::Local) return {};
  const double n = ranks, S = bytes;
  const int p_log = floor_log2(ranks);
  const double p = std::ldexp(1.0, p_log);
  const bool folds = (1 << p_log) != ranks;  // non-power-of-two: the extra ranks fold in and out
  CostCoefficients k;
  switch (algorithm) {
    case AllReduceAlgorithm::Naive:  // n-1 whole buffers into rank 0, n-1 reductions, n-1 back out
      k = {2 * (n - 1), 2 * (n - 1) * S, (n - 1) * S};
      break;
    case AllReduceAlgorithm::RecursiveDoubling:  // log2 p exchanges of S, each reduced
      k = {double(p_log), p_log * S, p_log * S};
      break;
    case AllReduceAlgorithm::Rabenseifner:  // halving: log2 p steps, (p-1)/p·S sent and reduced; doubling: the same sent
      k = {2.0 * p_log, 2 * (p - 1) / p * S, (p - 1) / p * S};
      break;
    case AllReduceAlgorithm::DoubleBinaryTree: {
      // Each tree carries S/2 in K segments; the busiest rank is interior in one tree and receives
      // (reduce) or sends (broadcast) c = min(2, n-1) segments of S/(2K) per step. Reduce, then
      // broadcast: D + K - 1 steps each.
      const double half = S / 2, K = segments(half, segment_bytes), c = std::min(2.0, n - 1);
      const double steps = double_binary_tree_depth(ranks) + K - 1, per_step = c * half / K;
      k = {2 * steps, 2 * steps * per_step, steps * per_step};
      break;
    }
    case AllReduceAlgorithm::Ring:  // n-1 reduce-scatter + n-1 all-gather steps of S/n
    case AllReduceAlgorithm::Library:
    case AllReduceAlgorithm::Hierarchical:  // one link class: a ring (perf/link_classes.hpp has two)
    case AllReduceAlgorithm::Local:
      k = {2 * (n - 1), 2 * (n - 1) / n * S, (n - 1) / n * S};
      break;
  }
  if (folds && (algorithm == AllReduceAlgorithm::RecursiveDoubling || algorithm == AllReduceAlgorithm::Rabenseifner)) {
    k.alpha += 2;  // fold in: a message and a reduction; fold out: a message of the finished sum
    k.beta += 2 * S;
    k.gamma += S;
  }
  return k;
}

CostCoefficients tree_broadcast_cost(int ranks, double bytes, double segment_bytes) {
  if (ranks <= 1) return {};
  // The root sends each of K segments to its ceil(log2 n) children over its one link; the last
  // segment's way down the first child's subtree overlaps the root's remaining sends.
  const double L = ceil_log2(ranks), K = segments(bytes, segment_bytes);
  return {L * K, L * bytes, 0};
}

CostCoefficients chain_broadcast_cost(int ranks, double bytes, double segment_bytes) {
  if (ranks <= 1) return {};
  // The last of K segments leaves the root at step K and crosses n-2 more links: n-2+K steps of S/K.
  const double K = segments(bytes, segment_bytes), steps = ranks - 2 + K;
  return {steps, steps / K * bytes, 0};
}

}  // namespace microddp::comm
