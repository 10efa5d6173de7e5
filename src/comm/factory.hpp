// factory.hpp — the table of communication backends: a row per backend (its name, kind, device
// buffer support, the all-reduce it runs, and the maker that builds it). It is the only place that
// knows which backends exist and which were compiled in: it describes them (backend_description.hpp)
// and builds communicators from them.
// Contract:
//   * make_communicator(name, runtime, config, faults) returns a ready communicator over all ranks of
//     MPI_COMM_WORLD, or throws core::UsageError naming the available backends for an unknown name or
//     a backend not compiled into this build. Every communicator it makes has desync detection
//     attached (Communicator::check_sync, set_debug_sync). `config` and `faults` are what the app
//     parsed from the environment (comm_config.hpp); the defaults are the documented ones.
//   * describe_backend(name, config) describes any backend microddp has, compiled in or not (a GPU
//     run's benchmark rows can be analysed on a CPU build); find_backend returns nullopt for names
//     that are no backend. The description's all-reduce choice is what the backend built with the
//     same config executes.
//   * The production rows are factory.cpp's kProductionBackends; register_backend appends a row at
//     start-up (the course's labs, src/labs, register theirs from app/main.cpp). Rows are listed in
//     table order (production first); they are added before any thread reads the table.
// Adding a backend: its files, and one row in kProductionBackends (docs/design.md, "Adding a backend").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/backend.hpp"
#include "comm/backend_description.hpp"
#include "comm/comm_config.hpp"
#include "comm/communicator.hpp"
#include "comm/runtime/mpi_runtime.hpp"

namespace microddp::comm {

std::unique_ptr<Communicator> make_communicator(std::string_view name, const MpiRuntime& runtime,
                                                const CommConfig& config = {}, const core::FaultPlan& faults = {});
// Backend names compiled into this build, in the order help text lists them.
std::vector<std::string> available_backends();
// Throws core::UsageError naming this build's backends unless `name` is one of them: what
// make_communicator checks first, for commands to check before MPI starts (exit 2, no abort).
void check_backend_available(std::string_view name);

// Builds the backend a row describes (`description`: the row with `config` applied) into a
// communicator over runtime.world() with the fault plan `faults`.
using BackendMaker = std::unique_ptr<Communicator> (*)(const MpiRuntime& runtime, const BackendDescription& description,
                                                       const CommConfig& config, const core::FaultPlan& faults);

struct BackendRow {
  std::string_view name;  // --comm NAME (a literal: rows outlive the program)
  BackendKind kind;
  bool accepts_device_buffers;
  AllReduceAlgorithm small, large;  // the all-reduce, as BackendDescription says it
  bool switches;                    // from `small` to `large` above CommConfig::auto_rd_max_bytes (only `auto`)
  BackendMaker make;                // nullptr: described, but not compiled into this build
};

// Appends a row (a name not in the table yet).
void register_backend(const BackendRow& row);

std::optional<BackendDescription> find_backend(std::string_view name, const CommConfig& config = {});
BackendDescription describe_backend(std::string_view name, const CommConfig& config = {});  // UsageError if unknown

}  // namespace microddp::comm
