// backend_description.cpp — names of the all-reduce algorithms (backend_description.hpp).
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
    case AllReduceAlgorithm::Hierarchical:
      return "hier";
  }
  return "?";
}

}  // namespace microddp::comm
