// collective_costs.hpp — the α-β-γ costs of the hand-rolled algorithms, as coefficients: one
// definition that `auto` chooses by (backend_description.hpp) and the performance model fits and
// predicts with (perf/alpha_beta.hpp). Pure arithmetic; derivations in docs/allreduce.md and
// docs/sync_primitives.md.
//
// A message of S bytes between two ranks costs α + S·β, reducing S bytes S·γ, so each algorithm
// takes T(n, S) = a·α + b·β + c·γ with coefficients that depend on the rank count n, the payload S
// and, for the pipelined algorithms, the segment size (K = ceil(S'/segment) segments of the S' bytes
// that one pipeline carries: a pipeline of depth D then takes D + K - 1 steps).
// Contract: n >= 1 (n = 1 costs nothing), bytes >= 0, segment_bytes >= 1; Local and Library have no
// formula of ours: Local costs nothing, Library is charged as a ring (a library's large-message
// algorithm is ring-like; a fit absorbs the rest).
#pragma once

#include <cstdint>

namespace microddp::comm {

enum class AllReduceAlgorithm : std::uint8_t;  // backend_description.hpp

struct CostCoefficients {
  double alpha = 0, beta = 0, gamma = 0;  // T = alpha·α + beta·β + gamma·γ
};

// A link in the α-β-γ model: seconds per message, per byte sent, per byte reduced.
struct LinkCosts {
  double alpha_s = 0;
  double beta_s_per_byte = 0;
  double gamma_s_per_byte = 0;
  double time_s(const CostCoefficients& k) const {
    return k.alpha * alpha_s + k.beta * beta_s_per_byte + k.gamma * gamma_s_per_byte;
  }
};

CostCoefficients all_reduce_cost(AllReduceAlgorithm algorithm, int ranks, double bytes, double segment_bytes);

// The hand-rolled broadcasts: the segmented binomial tree, and the pipelined chain.
CostCoefficients tree_broadcast_cost(int ranks, double bytes, double segment_bytes);
CostCoefficients chain_broadcast_cost(int ranks, double bytes, double segment_bytes);

// Depth of the double binary tree's trees in edges: floor(log2 n) (double_binary_tree_layout.hpp).
int double_binary_tree_depth(int ranks);

}  // namespace microddp::comm
