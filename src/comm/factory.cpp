// factory.cpp — the table of backends (--comm): the production rows, the registered ones, their
// descriptions, and construction by name.
#include "comm/factory.hpp"

#include <algorithm>

#include "comm/backends/hand_rolled_backend.hpp"
#include "comm/backends/hier_backend.hpp"
#include "comm/backends/mpi_backend.hpp"
#include "core/error.hpp"

#if defined(MICRODDP_HAVE_NCCL)
#include "comm/gpu/nccl_backend.hpp"
#endif

namespace microddp::comm {

namespace {

using A = AllReduceAlgorithm;

std::unique_ptr<Communicator> make_mpi(const MpiRuntime& runtime, const BackendDescription&, const CommConfig&,
                                       const core::FaultPlan& faults) {
  return std::make_unique<Communicator>(std::make_unique<MpiBackend>(runtime.world()), faults);
}
// naive, ring, rd, rabenseifner, dbtree, auto: the description names the all-reduce they run.
std::unique_ptr<Communicator> make_hand_rolled(const MpiRuntime& runtime, const BackendDescription& d,
                                               const CommConfig& config, const core::FaultPlan& faults) {
  return std::make_unique<Communicator>(std::make_unique<HandRolledBackend>(runtime.world(), d, config), faults);
}
std::unique_ptr<Communicator> make_hier(const MpiRuntime& runtime, const BackendDescription&, const CommConfig& config,
                                        const core::FaultPlan& faults) {
  return std::make_unique<Communicator>(std::make_unique<HierBackend>(runtime.world(), config), faults);
}
#if defined(MICRODDP_HAVE_NCCL)
std::unique_ptr<Communicator> make_nccl(const MpiRuntime& runtime, const BackendDescription&, const CommConfig& config,
                                        const core::FaultPlan& faults) {
  return std::make_unique<Communicator>(make_nccl_backend(runtime, config), faults);
}
std::unique_ptr<Communicator> make_nccl_ring(const MpiRuntime& runtime, const BackendDescription&,
                                             const CommConfig& config, const core::FaultPlan& faults) {
  return std::make_unique<Communicator>(make_gpu_ring_backend(runtime, config), faults);
}
#else
constexpr BackendMaker make_nccl = nullptr, make_nccl_ring = nullptr;  // not compiled in: described only
#endif

// One row per production backend, in the order help text lists them.
constexpr BackendRow kProductionBackends[] = {
    // The library's collectives; device buffers staged through pinned host memory or CUDA-aware MPI
    // (device_staging.hpp).
    {"mpi", BackendKind::Host, true, A::Library, A::Library, false, &make_mpi},
    {"naive", BackendKind::Host, false, A::Naive, A::Naive, false, &make_hand_rolled},
    {"ring", BackendKind::Host, false, A::Ring, A::Ring, false, &make_hand_rolled},
    {"rd", BackendKind::Host, false, A::RecursiveDoubling, A::RecursiveDoubling, false, &make_hand_rolled},
    {"rabenseifner", BackendKind::Host, false, A::Rabenseifner, A::Rabenseifner, false, &make_hand_rolled},
    {"dbtree", BackendKind::Host, false, A::DoubleBinaryTree, A::DoubleBinaryTree, false, &make_hand_rolled},
    // rd for small messages; above CommConfig::auto_rd_max_bytes the cheapest of ring, rabenseifner and
    // dbtree on CommConfig::auto_link (BackendDescription::model_chooses_large).
    {"auto", BackendKind::Host, false, A::RecursiveDoubling, A::Ring, true, &make_hand_rolled},
    // Nodes of several ranks: inside the node, then across nodes; device buffers always staged
    // through pinned host memory, the reduction on the host (hier_backend.hpp).
    {"hier", BackendKind::Host, true, A::Hierarchical, A::Hierarchical, false, &make_hier},
    // GPU backends: one GPU per rank; host buffers are staged (nccl_backend.hpp).
    {"nccl", BackendKind::Stream, true, A::Library, A::Library, false, make_nccl},
    {"nccl-ring", BackendKind::Stream, true, A::Ring, A::Ring, false, make_nccl_ring},
};

std::vector<BackendRow>& table() {
  static std::vector<BackendRow> rows(std::begin(kProductionBackends), std::end(kProductionBackends));
  return rows;
}

BackendDescription describe(const BackendRow& row, const CommConfig& config) {
  BackendDescription d;
  d.name = std::string(row.name);
  d.kind = row.kind;
  d.accepts_device_buffers = row.accepts_device_buffers;
  d.compiled_in = row.make != nullptr;
  d.small_algorithm = row.small;
  d.large_algorithm = row.large;
  d.switch_bytes = row.switches ? config.auto_rd_max_bytes : 0;
  d.model_chooses_large = row.switches;
  d.link = config.auto_link;
  d.segment_bytes = std::min(config.ring_segment_bytes, config.p2p_max_message_bytes);  // as the backend caps it
  return d;
}

const BackendRow* find_row(std::string_view name) {
  for (const BackendRow& row : table()) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

}  // namespace

void register_backend(const BackendRow& row) {
  MDDP_CHECK(find_row(row.name) == nullptr, "communication backend '" << row.name << "' registered twice");
  table().push_back(row);
}

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
  for (const BackendRow& row : table()) {
    if (row.make != nullptr) names.emplace_back(row.name);
  }
  return names;
}

std::optional<BackendDescription> find_backend(std::string_view name, const CommConfig& config) {
  if (const BackendRow* row = find_row(name)) return describe(*row, config);
  return std::nullopt;
}

BackendDescription describe_backend(std::string_view name, const CommConfig& config) {
  if (auto d = find_backend(name, config)) return *d;
  std::string list;
  for (const BackendRow& row : table()) list += (list.empty() ? "" : ", ") + std::string(row.name);
  MDDP_USAGE_CHECK(false, "unknown communication backend '" << name << "' (microddp has: " << list << ")");
  return {};
}

void check_backend_available(std::string_view name) {
  const BackendRow* row = find_row(name);
  if (row != nullptr && row->make != nullptr) return;
  std::string list;
  for (const auto& b : available_backends()) list += (list.empty() ? "" : ", ") + b;
  MDDP_USAGE_CHECK(false, "unknown communication backend '" << name << "' (this build has: " << list << ")");
}

std::unique_ptr<Communicator> make_communicator(std::string_view name, const MpiRuntime& runtime,
                                                const CommConfig& config, const core::FaultPlan& faults) {
  check_backend_available(name);
  const BackendRow& row = *find_row(name);
  auto c = row.make(runtime, describe(row, config), config, faults);
  c->attach_sync_comm(runtime.world());  // desync detection, the same for every backend
  return c;
}

}  // namespace microddp::comm
