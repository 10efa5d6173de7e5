// factory.cpp — backend selection by name (--comm).
#include "comm/factory.hpp"

#include "comm/hand_rolled_communicator.hpp"
#include "comm/hier_communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"

#include <cstdlib>

#if defined(MICRODDP_HAVE_NCCL)
#include "comm/nccl_communicator.hpp"
#endif

namespace microddp::comm {

std::vector<std::string> available_backends() {
  std::vector<std::string> names = {"mpi", "naive", "ring", "rd", "auto", "hier"};
#if defined(MICRODDP_HAVE_NCCL)
  // GPU backends: one GPU per rank; host buffers are staged (nccl_communicator.hpp).
  names.insert(names.end(), {"nccl", "nccl-ring"});
#endif
  return names;
}

namespace {

std::unique_ptr<Communicator> make_backend(std::string_view name, const MpiRuntime& runtime) {
  if (name == "mpi") return std::make_unique<MpiCommunicator>(runtime.world());
  if (name == "naive") return std::make_unique<HandRolledCommunicator>(runtime.world(), AllReduceAlgorithm::Naive);
  if (name == "ring") return std::make_unique<HandRolledCommunicator>(runtime.world(), AllReduceAlgorithm::Ring);
  if (name == "rd") return std::make_unique<HandRolledCommunicator>(runtime.world(), AllReduceAlgorithm::RecursiveDoubling);
  if (name == "auto") return std::make_unique<HandRolledCommunicator>(runtime.world(), AllReduceAlgorithm::Auto);
  if (name == "hier") {
    // Node override for tests on one machine (hier_topology.hpp); every rank parses the same text.
    const char* sizes = std::getenv("MICRODDP_HIER_NODE_SIZES");
    return std::make_unique<HierCommunicator>(
        runtime.world(), parse_node_sizes(sizes == nullptr ? "" : sizes, "MICRODDP_HIER_NODE_SIZES"));
  }
#if defined(MICRODDP_HAVE_NCCL)
  if (name == "nccl") return make_nccl_communicator(runtime);
  if (name == "nccl-ring") return make_gpu_ring_communicator(runtime);
#endif
  return nullptr;
}

}  // namespace

std::unique_ptr<Communicator> make_communicator(std::string_view name, const MpiRuntime& runtime) {
  if (auto c = make_backend(name, runtime)) {
    c->attach_sync_comm(runtime.world());  // desync detection, the same for every backend
    return c;
  }
  std::string list;
  for (const auto& b : available_backends()) list += (list.empty() ? "" : ", ") + b;
  MDDP_USAGE_CHECK(false, "unknown communication backend '" << name << "' (this build has: " << list << ")");
  return nullptr;
}

}  // namespace microddp::comm
