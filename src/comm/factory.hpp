// factory.hpp — the only place that knows which communication backends were compiled in.
// Contract: make_communicator(name, runtime) returns a ready communicator over all ranks of
// MPI_COMM_WORLD, or throws core::UsageError naming the available backends for an unknown name
// or a backend not compiled into this build. Every communicator it makes has desync detection
// attached (Communicator::check_sync, set_debug_sync).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mpi_runtime.hpp"

namespace microddp::comm {

std::unique_ptr<Communicator> make_communicator(std::string_view name, const MpiRuntime& runtime);
// Backend names compiled into this build, in the order help text lists them.
std::vector<std::string> available_backends();

}  // namespace microddp::comm
