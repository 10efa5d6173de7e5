// backend_description.cpp — names of the all-reduce algorithms, and which one a backend runs
// (backend_description.hpp).
#include "comm/backend_description.hpp"

namespace microddp::comm {

std::string_view all_reduce_algorithm_name(AllReduceAlgorithm a) {
  switch (a) {
    case AllReduceAlgorithm::Local:
      return "local";
    case AllReduceAlgorithm::Library:
      return "library";
    case AllReduceAlgorithm::Naive:
      return "naive";
    case AllReduceAlgorithm::Ring:
      return "ring";
    case AllReduceAlgorithm::RecursiveDoubling:
      return "rd";
    case AllReduceAlgorithm::Rabenseifner:
      return "rabenseifner";
    case AllReduceAlgorithm::DoubleBinaryTree:
      return "dbtree";
    case AllReduceAlgorithm::Hierarchical:
      return "hier";
  }
  return "?";
}

AllReduceAlgorithm cheapest_all_reduce(const LinkCosts& link, int ranks, std::int64_t bytes, std::int64_t segment_bytes) {
  AllReduceAlgorithm best = kModelChoices[0];
  double best_s = 0;
  for (AllReduceAlgorithm a : kModelChoices) {
    const double t = link.time_s(
        all_reduce_cost(a, ranks, static_cast<double>(bytes), static_cast<double>(segment_bytes)));
    if (a == kModelChoices[0] || t < best_s) {
      best = a;
      best_s = t;
    }
  }
  return best;
}

AllReduceAlgorithm BackendDescription::all_reduce_algorithm(std::int64_t bytes, int ranks) const {
  if (ranks <= 1) return AllReduceAlgorithm::Local;
  if (bytes <= switch_bytes) return small_algorithm;
  return model_chooses_large ? cheapest_all_reduce(link, ranks, bytes, segment_bytes) : large_algorithm;
}

}  // namespace microddp::comm
