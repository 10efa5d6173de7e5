// test_mpi_large_count.cpp — the mpi backend with a real count beyond INT_MAX (no lowered limit):
// broadcast and in-place all_reduce of INT_MAX + 1001 f32 elements (8.6 GB per buffer), exact.
// Opt-in and label `slow`: it runs only with MICRODDP_LARGE_COUNT_TESTS=1 and when MemAvailable
// covers every local rank's buffer plus the same again for MPI's all-reduce scratch (Open MPI
// allocates a full-size temporary; measured ~17 GB per rank); otherwise it skips. Run it on a
// large-memory node, e.g.
//   MICRODDP_LARGE_COUNT_TESTS=1 ctest -R mpi_large_count --output-on-failure
#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/backends/mpi_backend.hpp"
#include "core/host_buffer.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::testing {
namespace {

std::int64_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

TEST(MpiLargeCount, BeyondIntMax) {
  constexpr std::int64_t kCount = std::int64_t{INT_MAX} + 1001;  // the last chunk holds 1002 elements
  const char* opt_in = std::getenv("MICRODDP_LARGE_COUNT_TESTS");
  const std::int64_t need = 2 * kCount * static_cast<std::int64_t>(sizeof(float)) * runtime().local_size();
  // Every rank decides alike: rank 0's view, broadcast, so no rank runs the collective alone.
  int run = opt_in != nullptr && std::string(opt_in) == "1" && mem_available_bytes() >= need ? 1 : 0;
  MPI_Bcast(&run, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (run == 0)
    GTEST_SKIP() << "set MICRODDP_LARGE_COUNT_TESTS=1 on a node with >= " << need / (1 << 30) << " GiB available";

  comm::Communicator comm(std::make_unique<comm::MpiBackend>(runtime().world()));
  const int n = comm.size(), r = comm.rank();
  core::HostBuffer<float> buf(kCount);
  // Values < 2^24 so sums over a few ranks stay exact in f32.
  for (std::int64_t i = 0; i < kCount; ++i) buf[i] = r == n - 1 ? static_cast<float>(i % 999983) : -1.0f;
  comm.broadcast(buf.view(), n - 1);
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < kCount; ++i) wrong += buf[i] != static_cast<float>(i % 999983);
  EXPECT_EQ(wrong, 0) << "broadcast #wrong";

  for (std::int64_t i = 0; i < kCount; ++i) buf[i] = static_cast<float>((r + 1) * 1000 + i % 977);
  comm.all_reduce(buf.view(), core::ReduceOp::Sum);
  wrong = 0;
  for (std::int64_t i = 0; i < kCount; ++i)
    wrong += buf[i] != static_cast<float>(1000 * n * (n + 1) / 2 + n * (i % 977));
  EXPECT_EQ(wrong, 0) << "all_reduce #wrong";
}

}  // namespace
}  // namespace microddp::testing
