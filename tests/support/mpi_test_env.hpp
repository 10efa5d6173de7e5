// mpi_test_env.hpp — access to the process's MpiRuntime from MPI tests.
#pragma once

#include "comm/mpi_runtime.hpp"

namespace microddp::testing {
const comm::MpiRuntime& runtime();
}  // namespace microddp::testing
