// test_backend_description.cpp — the factory's descriptions of the backends (comm/factory.hpp,
// backend_description.hpp), without constructing any (no MPI): every backend this build has is
// described, the kind and device-buffer facts the app relies on, and which all-reduce algorithm runs
// per size and rank count — `auto`'s switch point with its default and a configured one, and its
// choice among the bandwidth algorithms by the α-β-γ model (collective_costs.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "comm/factory.hpp"
#include "core/error.hpp"

namespace microddp::comm {
namespace {

using A = AllReduceAlgorithm;

TEST(BackendDescription, EveryCompiledBackendIsDescribed) {
  for (const std::string& name : available_backends()) {
    const BackendDescription d = describe_backend(name);
    EXPECT_EQ(d.name, name);
    EXPECT_TRUE(d.compiled_in) << name;
  }
  const auto names = available_backends();
  for (const char* always : {"mpi", "naive", "ring", "rd", "rabenseifner", "dbtree", "auto", "hier"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), always), names.end()) << always;
  }
  // The GPU backends are described in every build; compiled in exactly when listed.
  for (const char* gpu : {"nccl", "nccl-ring"}) {
    const BackendDescription d = describe_backend(gpu);
    EXPECT_EQ(d.compiled_in, std::find(names.begin(), names.end(), gpu) != names.end()) << gpu;
  }
}

TEST(BackendDescription, KindsAndDeviceBuffers) {
  for (const char* host_only : {"naive", "ring", "rd", "rabenseifner", "dbtree", "auto"}) {
    const BackendDescription d = describe_backend(host_only);
    EXPECT_EQ(d.kind, BackendKind::Host) << host_only;
    EXPECT_FALSE(d.accepts_device_buffers) << host_only;
  }
  EXPECT_EQ(describe_backend("mpi").kind, BackendKind::Host);
  EXPECT_TRUE(describe_backend("mpi").accepts_device_buffers);  // staged, or CUDA-aware MPI
  EXPECT_EQ(describe_backend("hier").kind, BackendKind::Host);
  EXPECT_TRUE(describe_backend("hier").accepts_device_buffers);  // always staged
  for (const char* gpu : {"nccl", "nccl-ring"}) {
    EXPECT_EQ(describe_backend(gpu).kind, BackendKind::Stream) << gpu;
    EXPECT_TRUE(describe_backend(gpu).accepts_device_buffers) << gpu;
  }
}

TEST(BackendDescription, AllReduceAlgorithmPerSizeAndRanks) {
  EXPECT_EQ(describe_backend("naive").all_reduce_algorithm(1 << 20, 4), A::Naive);
  EXPECT_EQ(describe_backend("ring").all_reduce_algorithm(8, 4), A::Ring);
  EXPECT_EQ(describe_backend("rd").all_reduce_algorithm(1 << 30, 3), A::RecursiveDoubling);
  EXPECT_EQ(describe_backend("mpi").all_reduce_algorithm(1024, 2), A::Library);
  EXPECT_EQ(describe_backend("nccl").all_reduce_algorithm(1024, 2), A::Library);
  EXPECT_EQ(describe_backend("nccl-ring").all_reduce_algorithm(1024, 2), A::Ring);
  EXPECT_EQ(describe_backend("hier").all_reduce_algorithm(8, 4), A::Hierarchical);
  EXPECT_EQ(describe_backend("rabenseifner").all_reduce_algorithm(8, 5), A::Rabenseifner);
  EXPECT_EQ(describe_backend("dbtree").all_reduce_algorithm(1 << 30, 8), A::DoubleBinaryTree);
  for (const char* name : {"mpi", "naive", "ring", "rd", "rabenseifner", "dbtree", "auto", "hier", "nccl", "nccl-ring"}) {
    EXPECT_EQ(describe_backend(name).all_reduce_algorithm(1 << 20, 1), A::Local) << name;  // one rank
  }
  // auto: recursive doubling up to 16 KiB (the measured crossover, docs/allreduce.md), above it the
  // model's choice: at 4 ranks Rabenseifner (the ring's bandwidth with 4 latencies instead of 6); at 2
  // all three cost the same (2α + S·β + S/2·γ) and the tie goes to the ring.
  const BackendDescription a = describe_backend("auto");
  EXPECT_EQ(a.switch_bytes, 16 * 1024);
  EXPECT_EQ(a.all_reduce_algorithm(4, 4), A::RecursiveDoubling);
  EXPECT_EQ(a.all_reduce_algorithm(16 * 1024, 4), A::RecursiveDoubling);
  EXPECT_EQ(a.all_reduce_algorithm(16 * 1024 + 4, 4), A::Rabenseifner);
  EXPECT_EQ(a.all_reduce_algorithm(64 * 1024, 2), A::Ring);
  // MICRODDP_AUTO_RD_MAX_BYTES moves it, and only auto's.
  CommConfig c;
  c.auto_rd_max_bytes = 1024;
  EXPECT_EQ(describe_backend("auto", c).all_reduce_algorithm(1024, 3), A::RecursiveDoubling);
  EXPECT_EQ(describe_backend("auto", c).all_reduce_algorithm(1 << 20, 3), A::Ring);
  EXPECT_EQ(describe_backend("rd", c).all_reduce_algorithm(1 << 20, 3), A::RecursiveDoubling);
}

// auto's choice above the switch, on links where it can be worked out by hand (S = 1 MiB, one
// 4 MiB segment per tree half, so the double tree is not pipelined: D = floor(log2 n) steps each way).
TEST(BackendDescription, AutoChoosesTheCheapestInTheModel) {
  CommConfig c;
  const std::int64_t S = 1 << 20;
  // Latency only (α = 1 s): ring 2(n-1), Rabenseifner 2·log2 p (+2 when n is not a power of two),
  // double tree 2·floor(log2 n).
  c.auto_link = {1.0, 0.0, 0.0};
  const BackendDescription lat = describe_backend("auto", c);
  EXPECT_EQ(lat.all_reduce_algorithm(S, 4), A::Rabenseifner);      // 6, 4, 4: the tie goes to the first
  EXPECT_EQ(lat.all_reduce_algorithm(S, 5), A::DoubleBinaryTree);  // 8, 6, 4
  EXPECT_EQ(lat.all_reduce_algorithm(S, 8), A::Rabenseifner);      // 14, 6, 6
  EXPECT_EQ(lat.all_reduce_algorithm(S, 7), A::DoubleBinaryTree);  // 12, 6, 4
  // Bandwidth only (β = 1 s/B): ring 2(n-1)/n·S, Rabenseifner the same at a power of two and 2·S
  // more otherwise, the unpipelined double tree 2·D·S (two children of S/2 per step, each way).
  c.auto_link = {0.0, 1.0, 0.0};
  const BackendDescription bw = describe_backend("auto", c);
  EXPECT_EQ(bw.all_reduce_algorithm(S, 4), A::Ring);  // 1.5 S each: the ring is first
  EXPECT_EQ(bw.all_reduce_algorithm(S, 5), A::Ring);  // 1.6 S, 3.5 S, 4 S
  EXPECT_EQ(bw.all_reduce_algorithm(S, 6), A::Ring);
  // Every size and rank count: the description names what cheapest_all_reduce picks.
  const BackendDescription d = describe_backend("auto");
  for (int n = 2; n <= 9; ++n)
    for (std::int64_t b = 32 * 1024; b <= (std::int64_t{1} << 28); b *= 2)
      EXPECT_EQ(d.all_reduce_algorithm(b, n), cheapest_all_reduce(kDefaultAutoLink, n, b, kDefaultRingSegmentBytes))
          << n << " ranks, " << b << " B";
}

TEST(BackendDescription, UnknownNames) {
  EXPECT_FALSE(find_backend("no-such-backend").has_value());
  EXPECT_FALSE(find_backend("ring+dsync").has_value());  // a bench label, not a backend
  try {
    describe_backend("no-such-backend");
    ADD_FAILURE() << "no exception";
  } catch (const core::UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no-such-backend"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nccl-ring"), std::string::npos) << msg;  // lists every backend microddp has
  }
  EXPECT_EQ(all_reduce_algorithm_name(A::RecursiveDoubling), "rd");
  EXPECT_EQ(all_reduce_algorithm_name(A::Rabenseifner), "rabenseifner");
  EXPECT_EQ(all_reduce_algorithm_name(A::DoubleBinaryTree), "dbtree");
}

}  // namespace
}  // namespace microddp::comm
