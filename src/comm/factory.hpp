// factory.hpp — the only place that knows which communication backends exist and which were
// compiled in: it describes them (backend_description.hpp) and builds communicators from them.
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

// The course's lab backends (`lab-naive`, `lab-ring`, `lab-sync`: src/labs/lab_backend.hpp) run a student's
// code, which this library does not contain: the program installs their maker once at start-up
// (app/main.cpp). Without it, make_communicator refuses them with a message.
using LabBackendMaker = std::unique_ptr<HostBackend> (*)(MPI_Comm parent, const BackendDescription& description,
                                                         const CommConfig& config);
void set_lab_backend_maker(LabBackendMaker maker);

std::optional<BackendDescription> find_backend(std::string_view name, const CommConfig& config = {});
BackendDescription describe_backend(std::string_view name, const CommConfig& config = {});  // UsageError if unknown

}  // namespace microddp::comm
