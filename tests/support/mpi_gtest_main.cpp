// mpi_gtest_main.cpp — main() for MPI GoogleTest programs.
// Parses the communication settings from the environment (as the app's main does: a bad value ends
// every rank with exit code 2 before MPI starts), brings MPI up (MpiRuntime), runs the tests on
// every rank, prints GoogleTest output on rank 0 only, and makes the process exit code agree across
// ranks: if any rank failed a test, every rank exits 1, so `mpiexec` and ctest see the failure
// whichever rank saw it. A rank that throws aborts the whole job (no hang).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "comm/runtime/mpi_runtime.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::testing {
const comm::MpiRuntime* g_runtime = nullptr;
comm::CommConfig g_comm_config;
const comm::MpiRuntime& runtime() { return *g_runtime; }
const comm::CommConfig& comm_config() { return g_comm_config; }
}  // namespace microddp::testing

int main(int argc, char** argv) {
  try {
    microddp::testing::g_comm_config =
        microddp::comm::parse_comm_config([](const char* name) -> const char* { return std::getenv(name); });
  } catch (const microddp::core::UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  try {
    microddp::comm::MpiRuntime runtime(&argc, &argv);
    microddp::testing::g_runtime = &runtime;
    ::testing::InitGoogleTest(&argc, argv);
    if (runtime.rank() != 0) {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
    }
    int local_failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    if (runtime.rank() != 0 && local_failed) {
      std::fprintf(stderr, "[rank %d] had failing tests (output shown on rank 0 only; rerun with --gtest_filter)\n",
                   runtime.rank());
    }
    int any_failed = 0;
    MPI_Allreduce(&local_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    // A program whose every test skipped (e.g. a large-memory test not enabled) exits with the skip
    // code so ctest reports it as skipped, never as passed. All ranks must agree.
    const auto* unit = ::testing::UnitTest::GetInstance();
    int local_all_skipped =
        (unit->test_to_run_count() > 0 && unit->skipped_test_count() == unit->test_to_run_count()) ? 1 : 0;
    int all_skipped = 0;
    MPI_Allreduce(&local_all_skipped, &all_skipped, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    microddp::testing::g_runtime = nullptr;
    if (!any_failed && all_skipped) return 77;
    return any_failed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fatal: %s\n", e.what());
    microddp::comm::MpiRuntime::abort_all(1);
  }
}
