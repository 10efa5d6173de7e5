// hand_rolled_backend.cpp — dispatch of the hand-rolled backends to their algorithms.
#include "comm/backends/hand_rolled_backend.hpp"

#include <algorithm>

#include "comm/transport/mpi_check.hpp"
#include "comm/transport/mpi_comm_size.hpp"
#include "comm/algorithms/flat_collectives.hpp"
#include "comm/algorithms/p2p_algorithms.hpp"
#include "core/error.hpp"

namespace microddp::comm {

namespace {

bool ours(AllReduceAlgorithm a) {
  return a == AllReduceAlgorithm::Naive || a == AllReduceAlgorithm::Ring || a == AllReduceAlgorithm::RecursiveDoubling ||
         a == AllReduceAlgorithm::Rabenseifner || a == AllReduceAlgorithm::DoubleBinaryTree;
}

// Checked before the transport duplicates the communicator, so a bad description throws on every
// rank before any collective call.
const BackendDescription& checked(const BackendDescription& d) {
  MDDP_CHECK(ours(d.small_algorithm) && ours(d.large_algorithm),
             "hand-rolled backend '" << d.name << "' needs naive, ring, rd, rabenseifner or dbtree all-reduces, got "
                                     << all_reduce_algorithm_name(d.small_algorithm) << "/"
                                     << all_reduce_algorithm_name(d.large_algorithm));
  return d;
}

}  // namespace

HandRolledBackend::HandRolledBackend(MPI_Comm parent, BackendDescription description, const CommConfig& config)
    : HostBackend(mpi_comm_rank(parent), mpi_comm_size(parent)),
      description_(checked(description)),
      transport_(parent, config.p2p_max_message_bytes),
      segment_bytes_(std::min(config.ring_segment_bytes, transport_.max_message_bytes())),  // a segment is one message
      chain_broadcast_min_bytes_(config.chain_broadcast_min_bytes) {}

void HandRolledBackend::execute(const CollectiveCall& call) {
  MDDP_CHECK(call.send.device == core::Device::Host && call.recv.device == core::Device::Host,
             name() << " backend: " << collective_name(call.kind)
                    << " on a device buffer (this backend moves host memory only)");
  P2pTransport& t = transport_;
  t.begin(call.seq);
  if (call.kind != CollectiveKind::AllReduce) {
    run_flat_collective(t, call, segment_bytes_, chain_broadcast_min_bytes_);
    return;
  }
  // The description is the one definition of which algorithm runs (also for the perf model).
  switch (description_.all_reduce_algorithm(call.recv.bytes(), size())) {
    case AllReduceAlgorithm::Naive:
      naive_all_reduce(t, call.send, call.recv, call.op);
      return;
    case AllReduceAlgorithm::RecursiveDoubling:
      rd_all_reduce(t, call.send, call.recv, call.op);
      return;
    case AllReduceAlgorithm::Ring:
      ring_all_reduce(t, call.send, call.recv, call.op, segment_bytes_);
      return;
    case AllReduceAlgorithm::Rabenseifner:
      rabenseifner_all_reduce(t, call.send, call.recv, call.op);
      return;
    case AllReduceAlgorithm::DoubleBinaryTree:
      double_binary_tree_all_reduce(t, call.send, call.recv, call.op, segment_bytes_);
      return;
    case AllReduceAlgorithm::Local:
      copy_unless_same(call.recv, call.send);
      return;
    case AllReduceAlgorithm::Library:
    case AllReduceAlgorithm::Hierarchical:
      break;  // refused by the constructor
  }
  MDDP_CHECK(false, name() << " backend: all-reduce algorithm "
                           << all_reduce_algorithm_name(description_.all_reduce_algorithm(call.recv.bytes(), size()))
                           << " is not hand-rolled");
}

}  // namespace microddp::comm
