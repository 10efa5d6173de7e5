// test_backend_description.cpp — the factory's descriptions of the backends (comm/factory.hpp,
// backend_description.hpp), without constructing any (no MPI): every backend this build has is
// described, the kind and device-buffer facts the app relies on, and which all-reduce algorithm runs
// per size and rank count — `auto`'s switch point with its default and a configured one.
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
  for (const char* always : {"mpi", "naive", "ring", "rd", "auto", "hier"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), always), names.end()) << always;
  }
  // The GPU backends are described in every build; compiled in exactly when listed.
  for (const char* gpu : {"nccl", "nccl-ring"}) {
    const BackendDescription d = describe_backend(gpu);
    EXPECT_EQ(d.compiled_in, std::find(names.begin(), names.end(), gpu) != names.end()) << gpu;
  }
}

TEST(BackendDescription, KindsAndDeviceBuffers) {
  for (const char* host_only : {"naive", "ring", "rd", "auto"}) {
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
  for (const char* name : {"mpi", "naive", "ring", "rd", "auto", "hier", "nccl", "nccl-ring"}) {
    EXPECT_EQ(describe_backend(name).all_reduce_algorithm(1 << 20, 1), A::Local) << name;  // one rank
  }
  // auto: recursive doubling up to 16 KiB (the measured crossover, docs/allreduce.md), ring above.
  const BackendDescription a = describe_backend("auto");
  EXPECT_EQ(a.switch_bytes, 16 * 1024);
  EXPECT_EQ(a.all_reduce_algorithm(4, 4), A::RecursiveDoubling);
  EXPECT_EQ(a.all_reduce_algorithm(16 * 1024, 4), A::RecursiveDoubling);
  EXPECT_EQ(a.all_reduce_algorithm(16 * 1024 + 4, 4), A::Ring);
  EXPECT_EQ(a.all_reduce_algorithm(64 * 1024, 2), A::Ring);
  // MICRODDP_AUTO_RD_MAX_BYTES moves it, and only auto's.
  CommConfig c;
  c.auto_rd_max_bytes = 1024;
  EXPECT_EQ(describe_backend("auto", c).all_reduce_algorithm(1024, 3), A::RecursiveDoubling);
  EXPECT_EQ(describe_backend("auto", c).all_reduce_algorithm(1028, 3), A::Ring);
  EXPECT_EQ(describe_backend("rd", c).all_reduce_algorithm(1 << 20, 3), A::RecursiveDoubling);
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
}

}  // namespace
}  // namespace microddp::comm
