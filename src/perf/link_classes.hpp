// link_classes.hpp — the α-β model with one (α, β) per link class: inside a node (shared memory)
// and between nodes (the network). It predicts the flat ring and the hierarchical all-reduce
// (`--comm hier`, src/comm/algorithms/hier_collectives.hpp) on N nodes of L ranks and says which is faster.
//
// Each class is fitted separately (fit_alpha_beta_regimes, with its size regimes and quality) from
// a `microddp bench collectives` run of the ring that uses only that class: all ranks on one node
// (intra), one rank per node (inter). Costs, S bytes, n = N·L ranks placed node by node:
//   flat ring: 2(n-1) steps of S/n; with N > 1 every step waits for its one cross-node hop, so
//              T = 2(n-1)·(α_inter + S/n·β_inter)          (N = 1: the same with intra)
//   hier:      reduce-scatter and all-gather inside the node, each (L-1)·α_intra + (L-1)/L·S·β_intra,
//              plus a ring over N of S/L bytes per local index; the L rings of a node share its
//              link, so 2(N-1)·α_inter + 2(N-1)/N·S·β_inter.
// With β terms dominant, ring/hier → ((n-1)/n) / ((N-1)/N): 1.5 at 2 x 2, 1.75 at 2 x 4, 1.17 at 4 x 2
// (the inter-node bytes per node fall from 2(n-1)/n·S to 2(N-1)/N·S). Assumptions (what the model
// misses): one network link per node, shared by its ranks; links of equal rate (a slower one
// bounds both algorithms: fit the class from the slowest); phases do not overlap; the node-local
// phases' reduction cost is in β_intra (effective, as in alpha_beta.hpp).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/alpha_beta.hpp"
#include "perf/bench_rows.hpp"

namespace microddp::perf {

struct LinkClassModel {
  FitResult intra;  // ring all-reduce fitted on ranks of one node
  FitResult inter;  // ring all-reduce fitted on one rank per node
  std::string intra_source, inter_source;
  // Rank counts the fits saw (the largest): size regimes are indexed by the all-reduce size at that
  // count, so a prediction looks its messages up as message bytes x these ranks.
  int intra_ranks = 2, inter_ranks = 2;
};

// Fits both classes from bench rows (backend `ring` if present, else the first backend with
// all_reduce rows). Throws core::UsageError when a file has no usable all-reduce rows.
LinkClassModel fit_link_classes(const std::vector<BenchRow>& intra_rows, const std::string& intra_source,
                                const std::vector<BenchRow>& inter_rows, const std::string& inter_source);

double flat_ring_all_reduce_s(const LinkClassModel& m, int nodes, int ranks_per_node, double bytes);
double hier_all_reduce_s(const LinkClassModel& m, int nodes, int ranks_per_node, double bytes);

// A fit too poor to decide with: R² below kPoorFitR2 or a measured point further than
// kPoorFitMaxRelResidual from the fit. Empty when the fit is fine, else a one-line warning.
inline constexpr double kPoorFitR2 = 0.9;
// Hier and ring differ by 1.17x (4 x 2) to 1.75x (2 x 4) in the β-bound regime: a fit that misses a
// measured point by more than 30% could pick the wrong one at most shapes. At 4 x 2 a smaller miss
// can already do that, so an unflagged fit is no guarantee there (the measured column says).
inline constexpr double kPoorFitMaxRelResidual = 0.3;
std::string fit_warning(const FitResult& f);

// The comparison `analyze --bench-intra --bench-inter` reports: per size (powers of 4 from 4 KiB to
// max_bytes) both predictions, the faster one, the crossover, every fit's quality and its warning
// next to each prediction that uses it; `measured` (optional bench rows of ring and hier on this
// N x L shape) adds the measured times and the model's error.
nlohmann::json compare_hier_ring(const LinkClassModel& m, int nodes, int ranks_per_node, double max_bytes,
                                 const std::vector<BenchRow>& measured);
std::string format_hier_comparison(const nlohmann::json& j);

}  // namespace microddp::perf
