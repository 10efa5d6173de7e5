// backend_description.hpp — what is known about a communication backend without constructing it:
// its name, how its collectives run (host or stream backend, backend.hpp), whether it accepts
// device buffers, whether this build has it, and which all-reduce algorithm it runs for a message
// of a given size at a given rank count.
//
// Contract: the factory (factory.hpp) is the only place that fills descriptions, from one table; the
// app (device choice, bench memory placement) and the performance model (perf/alpha_beta.hpp) ask
// it instead of keeping their own lists, and the hand-rolled backends execute the algorithm their
// description names, so `auto`'s switch point (CommConfig::auto_rd_max_bytes) has one definition.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "comm/collective_costs.hpp"

namespace microddp::comm {

enum class AllReduceAlgorithm : std::uint8_t {
  Local,              // one rank: nothing leaves it (a copy at most)
  Library,            // the library's own choice (MPI_Allreduce, ncclAllReduce): not ours to name
  Naive,              // everything through rank 0 (naive_allreduce.cpp)
  Ring,               // reduce-scatter + all-gather around a ring (ring_collectives.cpp, the GPU ring)
  RecursiveDoubling,  // log2(n) whole-buffer exchanges (recursive_doubling.cpp)
  Rabenseifner,       // reduce-scatter by recursive halving + all-gather by recursive doubling (rabenseifner.cpp)
  DoubleBinaryTree,   // two complementary binary trees, half the buffer each, pipelined (double_binary_tree.cpp)
  Hierarchical,       // inside the node, then across nodes, then inside the node (hier_collectives.cpp)
};
// "local", "library", "naive", "ring", "rd", "rabenseifner", "dbtree", "hier"
std::string_view all_reduce_algorithm_name(AllReduceAlgorithm a);

// Host: collectives run to completion on a thread of ours (the progress engine); Stream: they are
// enqueued on a CUDA stream and progress on the device (backend.hpp has the two interfaces).
enum class BackendKind : std::uint8_t { Host, Stream };

struct BackendDescription {
  std::string name;  // as --comm spells it
  BackendKind kind = BackendKind::Host;
  bool accepts_device_buffers = false;  // Device::Cuda views (natively, or staged through the host)
  bool compiled_in = false;             // this build can construct it
  // All-reduce: small_algorithm for messages of at most switch_bytes bytes, large_algorithm above.
  // Only `auto` switches; for every other backend both are the same algorithm.
  AllReduceAlgorithm small_algorithm = AllReduceAlgorithm::Library;
  AllReduceAlgorithm large_algorithm = AllReduceAlgorithm::Library;
  std::int64_t switch_bytes = 0;
  // `auto` above switch_bytes: instead of large_algorithm, the cheapest of kModelChoices for the
  // size and rank count on `link`, pipelined in segments of segment_bytes (collective_costs.hpp).
  bool model_chooses_large = false;
  LinkCosts link;
  std::int64_t segment_bytes = 1;

  // The algorithm that runs for an all-reduce of `bytes` bytes over `ranks` ranks.
  AllReduceAlgorithm all_reduce_algorithm(std::int64_t bytes, int ranks) const;
};

// What `auto` chooses among above its switch point, in the order ties go (bandwidth algorithms:
// naive is never cheaper than the ring, and rd is the small-message side).
inline constexpr AllReduceAlgorithm kModelChoices[] = {AllReduceAlgorithm::Ring, AllReduceAlgorithm::Rabenseifner,
                                                       AllReduceAlgorithm::DoubleBinaryTree};
// The cheapest of kModelChoices in the α-β-γ model (the first of equals).
AllReduceAlgorithm cheapest_all_reduce(const LinkCosts& link, int ranks, std::int64_t bytes, std::int64_t segment_bytes);

}  // namespace microddp::comm
