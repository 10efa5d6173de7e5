// factory.cpp — the table of backends (--comm), their descriptions, and construction by name.
#include "comm/factory.hpp"

#include "comm/backends/hand_rolled_backend.hpp"
#include "comm/backends/hier_backend.hpp"
#include "comm/backends/mpi_backend.hpp"
#include "core/error.hpp"

#if defined(MICRODDP_HAVE_NCCL)
#include "comm/gpu/nccl_backend.hpp"
#endif

namespace microddp::comm {

namespace {

#if defined(MICRODDP_HAVE_NCCL)
constexpr bool kHaveNccl = true;
#else
constexpr bool kHaveNccl = false;
#endif

using A = AllReduceAlgorithm;

// One row per backend, in the order help text lists them. switches: the all-reduce changes from
// `small` to `large` above CommConfig::auto_rd_max_bytes (only `auto`).
struct Row {
  std::string_view name;
  BackendKind kind;
  bool accepts_device_buffers;
  bool compiled_in;
  A small, large;
  bool switches;
};
constexpr Row kBackends[] = {
    // The library's collectives; device buffers staged through pinned host memory or CUDA-aware MPI
    // (device_staging.hpp).
    {"mpi", BackendKind::Host, true, true, A::Library, A::Library, false},
    {"naive", BackendKind::Host, false, true, A::Naive, A::Naive, false},
    {"ring", BackendKind::Host, false, true, A::Ring, A::Ring, false},
    {"rd", BackendKind::Host, false, true, A::RecursiveDoubling, A::RecursiveDoubling, false},
    {"auto", BackendKind::Host, false, true, A::RecursiveDoubling, A::Ring, true},
    // Nodes of several ranks: inside the node, then across nodes; device buffers always staged
    // through pinned host memory, the reduction on the host (hier_backend.hpp).
    {"hier", BackendKind::Host, true, true, A::Hierarchical, A::Hierarchical, false},
    // GPU backends: one GPU per rank; host buffers are staged (nccl_backend.hpp).
    {"nccl", BackendKind::Stream, true, kHaveNccl, A::Library, A::Library, false},
    {"nccl-ring", BackendKind::Stream, true, kHaveNccl, A::Ring, A::Ring, false},
    // The course's labs (docs/labs): a student's fp32 all-reduce inside the real program; built
    // outside this library (src/labs), so the program installs their maker (factory.hpp).
    {"lab-naive", BackendKind::Host, false, true, A::Naive, A::Naive, false},
    {"lab-ring", BackendKind::Host, false, true, A::Ring, A::Ring, false},
    // Lab 07: the student's broadcast, gather and barrier; all-reduces run the production ring.
    {"lab-sync", BackendKind::Host, false, true, A::Ring, A::Ring, false},
};

LabBackendMaker g_lab_backend_maker = nullptr;

BackendDescription describe(const Row& row, const CommConfig& config) {
  BackendDescription d;
  d.name = std::string(row.name);
  d.kind = row.kind;
  d.accepts_device_buffers = row.accepts_device_buffers;
  d.compiled_in = row.compiled_in;
  d.small_algorithm = row.small;
  d.large_algorithm = row.large;
  d.switch_bytes = row.switches ? config.auto_rd_max_bytes : 0;
  return d;
}

std::unique_ptr<Communicator> make_backend(const BackendDescription& d, const MpiRuntime& runtime,
                                           const CommConfig& config, const core::FaultPlan& faults) {
  if (d.name == "mpi") return std::make_unique<Communicator>(std::make_unique<MpiBackend>(runtime.world()), faults);
#if defined(MICRODDP_HAVE_NCCL)
  if (d.name == "nccl") return std::make_unique<Communicator>(make_nccl_backend(runtime, config), faults);
  if (d.name == "nccl-ring") return std::make_unique<Communicator>(make_gpu_ring_backend(runtime, config), faults);
#endif
  if (d.name.rfind("lab-", 0) == 0) {
    MDDP_USAGE_CHECK(g_lab_backend_maker != nullptr,
                     "--comm " << d.name << ": this program was built without the course's labs (docs/labs)");
    return std::make_unique<Communicator>(g_lab_backend_maker(runtime.world(), d, config), faults);
  }
  if (d.name == "hier")
    return std::make_unique<Communicator>(std::make_unique<HierBackend>(runtime.world(), config), faults);
  // naive, ring, rd, auto: the description names the all-reduce they run.
  return std::make_unique<Communicator>(std::make_unique<HandRolledBackend>(runtime.world(), d, config), faults);
}

}  // namespace

void set_lab_backend_maker(LabBackendMaker maker) { g_lab_backend_maker = maker; }

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
  for (const Row& row : kBackends) {
    if (row.compiled_in) names.emplace_back(row.name);
  }
  return names;
}

std::optional<BackendDescription> find_backend(std::string_view name, const CommConfig& config) {
  for (const Row& row : kBackends) {
    if (row.name == name) return describe(row, config);
  }
  return std::nullopt;
}

BackendDescription describe_backend(std::string_view name, const CommConfig& config) {
  if (auto d = find_backend(name, config)) return *d;
  std::string list;
  for (const Row& row : kBackends) list += (list.empty() ? "" : ", ") + std::string(row.name);
  MDDP_USAGE_CHECK(false, "unknown communication backend '" << name << "' (microddp has: " << list << ")");
  return {};
}

void check_backend_available(std::string_view name) {
  const std::optional<BackendDescription> d = find_backend(name);
  if (d && d->compiled_in) return;
  std::string list;
  for (const auto& b : available_backends()) list += (list.empty() ? "" : ", ") + b;
  MDDP_USAGE_CHECK(false, "unknown communication backend '" << name << "' (this build has: " << list << ")");
}

std::unique_ptr<Communicator> make_communicator(std::string_view name, const MpiRuntime& runtime,
                                                const CommConfig& config, const core::FaultPlan& faults) {
  check_backend_available(name);
  const std::optional<BackendDescription> d = find_backend(name, config);
  auto c = make_backend(*d, runtime, config, faults);
  c->attach_sync_comm(runtime.world());  // desync detection, the same for every backend
  return c;
}

}  // namespace microddp::comm
