// mpi_gtest_run.cpp — see mpi_gtest_run.hpp.
#include "support/mpi_gtest_run.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/error.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::testing {

namespace {
constexpr int kSkip = 77;  // MICRODDP_SKIP_CODE (cmake/MicroddpTesting.cmake)
const comm::MpiRuntime* g_runtime = nullptr;
comm::CommConfig g_comm_config;
}  // namespace

const comm::MpiRuntime& runtime() { return *g_runtime; }
const comm::CommConfig& comm_config() { return g_comm_config; }

int run_mpi_gtest(int argc, char** argv, SkipCheck skip) {
  try {
    g_comm_config = comm::parse_comm_config([](const char* name) -> const char* { return std::getenv(name); });
  } catch (const core::UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  try {
    comm::MpiRuntime runtime(&argc, &argv);
    g_runtime = &runtime;
    ::testing::InitGoogleTest(&argc, argv);
    if (skip != nullptr) {
      if (const std::string why = skip(runtime); !why.empty()) {
        if (runtime.rank() == 0) std::printf("%s: skipped\n", why.c_str());
        g_runtime = nullptr;
        return kSkip;
      }
    }
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
    g_runtime = nullptr;
    if (!any_failed && all_skipped) return kSkip;
    return any_failed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fatal: %s\n", e.what());
    comm::MpiRuntime::abort_all(1);
  }
}

}  // namespace microddp::testing
