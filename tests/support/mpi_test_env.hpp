// mpi_test_env.hpp — access to the process's MpiRuntime from MPI tests, and the communication
// settings the test's environment asks for (comm/comm_config.hpp: e.g. MICRODDP_RING_SEGMENT_BYTES,
// which tests/comm/CMakeLists.txt sets for collectives_p2p_small), parsed once by main as the app
// does. Pass comm_config() to make_communicator wherever a test's registration may set them.
#pragma once

#include "comm/comm_config.hpp"
#include "comm/runtime/mpi_runtime.hpp"

namespace microddp::testing {
const comm::MpiRuntime& runtime();
const comm::CommConfig& comm_config();
}  // namespace microddp::testing
