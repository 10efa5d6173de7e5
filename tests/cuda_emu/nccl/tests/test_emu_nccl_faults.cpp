// test_emu_nccl_faults.cpp — failures across processes (MPI launches the ranks and broadcasts the id):
// desynchronised collectives (an error that holds the stream until abort, as on a GPU), a rank that
// never joins an operation (abort must unblock the others), a
// rank that never joins the communicator (bootstrap timeout), two ranks on one GPU, and interface
// selection by NCCL_SOCKET_IFNAME. Every test leaves every rank able to run the next one.
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "emu_nccl_mpi.hpp"
#include "emu_nccl_test_util.hpp"

namespace emu_test {
namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      unsetenv(name_);
    } else {
      setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

ncclResult_t async_error(ncclComm_t comm) {
  ncclResult_t e = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &e), ncclSuccess);
  return e;
}

bool is_async_failure(ncclResult_t e) { return e == ncclInvalidUsage || e == ncclRemoteError || e == ncclSystemError; }

// Rank 0 all-reduces 1000 elements, every other rank 999: every rank gets an asynchronous error
// instead of writing past 999 elements; the messages of ranks 0 and 1 name both counts. As on a GPU
// (NCCL's kernels keep waiting), the stream holding the failed collective completes only once the
// communicator is aborted.
TEST(EmuNcclFaults, MismatchedCountsFailOnEveryRank) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(init_world_comm(&comm), ncclSuccess) << ncclGetLastError(nullptr);
  const int me = world_rank();
  const std::size_t count = me == 0 ? 1000 : 999;
  DeviceBuffer buf(1001 * 4);
  std::vector<std::int32_t> fill(1001, 7);
  buf.upload(fill.data(), fill.size() * 4);
  Stream s;
  EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), count, ncclInt32, ncclSum, comm, s), ncclSuccess);
  EXPECT_TRUE(eventually([&] { return async_error(comm) != ncclSuccess; }, 20.0)) << "the mismatch was not reported";
  const ncclResult_t err = async_error(comm);
  const std::string msg = ncclGetLastError(comm);
  EXPECT_TRUE(is_async_failure(err)) << ncclGetErrorString(err) << ": " << msg;
  if (me <= 1) {
    EXPECT_NE(msg.find("count 1000"), std::string::npos) << msg;
    EXPECT_NE(msg.find("count 999"), std::string::npos) << msg;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady) << "a failed collective completed its stream before the abort";
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  EXPECT_TRUE(eventually([&] { return cudaStreamQuery(s) == cudaSuccess; }, 2.0)) << "abort did not release the stream";
  std::vector<std::int32_t> after(1001);
  buf.download(after.data(), after.size() * 4);
  EXPECT_EQ(after[count], 7) << "memory beyond the count was written";
}

// The last rank never issues the all-reduce: the others' streams stay blocked (no error, no timeout)
// until each aborts its communicator from the host thread, which must return promptly.
TEST(EmuNcclFaults, AbortUnblocksACollectiveWaitingForAnAbsentRank) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(init_world_comm(&comm), ncclSuccess) << ncclGetLastError(nullptr);
  const int me = world_rank(), absent = world_size() - 1;
  DeviceBuffer buf(1 << 20);
  Stream s;
  if (me != absent) {
    EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), (1 << 20) / 4, ncclFloat32, ncclSum, comm, s), ncclSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady) << "the all-reduce finished without the absent rank";
    EXPECT_EQ(async_error(comm), ncclSuccess);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // every blocked rank checked before anyone aborts
  if (me != absent) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    EXPECT_LT(seconds_since(t0), 2.0) << "ncclCommAbort took too long";
    EXPECT_TRUE(eventually([&] { return cudaStreamQuery(s) == cudaSuccess; }, 2.0))
        << "abort did not unblock the stream";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == absent) {
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);  // nothing pending on it
  }
}

TEST(EmuNcclFaults, DuplicateGpuAcrossProcesses) {
  ncclComm_t comm = nullptr;
  EXPECT_EQ(init_world_comm(&comm, /*device=*/0), ncclInvalidUsage);
  EXPECT_EQ(comm, nullptr);
  const std::string msg = ncclGetLastError(nullptr);
  EXPECT_NE(msg.find("Duplicate GPU detected: rank 0 and rank 1 both on CUDA device 0"), std::string::npos) << msg;
  MPI_Barrier(MPI_COMM_WORLD);
}

// The last rank never calls ncclCommInitRank: the others fail after the bootstrap timeout, with a
// message naming the missing rank.
TEST(EmuNcclFaults, BootstrapTimeoutWhenARankNeverJoins) {
  const ScopedEnv env("NCCL_EMU_BOOTSTRAP_TIMEOUT_S", "2");
  const int me = world_rank(), absent = world_size() - 1;
  ASSERT_EQ(cudaSetDevice(node_local_rank()), cudaSuccess);
  ncclUniqueId id;
  ASSERT_EQ(broadcast_unique_id(id), ncclSuccess);
  if (me != absent) {
    ncclComm_t comm = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(ncclCommInitRank(&comm, world_size(), id, me), ncclSystemError);
    const double took = seconds_since(t0);
    EXPECT_GE(took, 1.9);
    EXPECT_LT(took, 10.0);
    const std::string msg = ncclGetLastError(nullptr);
    EXPECT_NE(msg.find("missing rank(s): " + std::to_string(absent)), std::string::npos) << msg;
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(EmuNcclFaults, SocketIfnameSelectsTheInterface) {
  {
    const ScopedEnv env("NCCL_SOCKET_IFNAME", "lo");
    ncclComm_t comm = nullptr;
    ASSERT_EQ(init_world_comm(&comm), ncclSuccess) << ncclGetLastError(nullptr);
    DeviceBuffer buf(4);
    const std::int32_t one = 1;
    buf.upload(&one, 4);
    Stream s;
    EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), 1, ncclInt32, ncclSum, comm, s), ncclSuccess);
    s.sync();
    std::int32_t got = 0;
    buf.download(&got, 4);
    EXPECT_EQ(got, world_size());
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  }
  if (world_rank() == 0) {
    const ScopedEnv env("NCCL_SOCKET_IFNAME", "=no-such-interface");
    ncclUniqueId id;
    EXPECT_EQ(ncclGetUniqueId(&id), ncclSystemError);
    const std::string msg = ncclGetLastError(nullptr);
    EXPECT_NE(msg.find("matches no up IPv4 interface"), std::string::npos) << msg;
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace emu_test
