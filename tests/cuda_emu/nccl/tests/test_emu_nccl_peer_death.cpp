// test_emu_nccl_peer_death.cpp — a rank that dies in the middle of a collective becomes an asynchronous
// error on the survivors, not a hang.
//
// The victim is an extra rank: the last MPI process forks a child (before anything of the CUDA runtime
// or NCCL has started in this process, so the child inherits no threads' state) that joins the
// communicator as rank n and is killed with SIGKILL while it and the other ranks are inside an
// all-reduce (rank 0 holds its own part back behind a stream sleep, so nobody can finish early). MPI
// never sees the child; the survivors must report ncclRemoteError or ncclSystemError and return.
// A separate program from the other fault tests: the fork must come first in the process.
#include <mpi.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "emu_nccl_mpi.hpp"
#include "emu_nccl_test_util.hpp"

namespace emu_test {
namespace {

constexpr std::size_t kCount = 16u << 20;  // floats: 64 MiB, far more than socket buffers hold
constexpr int kChildLifetimeS = 60;        // the child ends itself if nobody kills it (a failed parent)

bool read_all(int fd, void* data, std::size_t bytes) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::read(fd, p, bytes);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

// The victim: joins as rank `rank` of `nranks`, enters the all-reduce, says so, waits to be killed.
[[noreturn]] void victim(int id_fd, int ready_fd, int rank, int nranks) {
  alarm(kChildLifetimeS);
  ncclUniqueId id;
  char status = 'x';
  if (read_all(id_fd, &id, sizeof id) && cudaSetDevice(rank) == cudaSuccess) {
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, nranks, id, rank) == ncclSuccess) {
      void* buf = nullptr;
      cudaStream_t s = nullptr;
      if (cudaMalloc(&buf, kCount * 4) == cudaSuccess && cudaStreamCreate(&s) == cudaSuccess &&
          ncclAllReduce(buf, buf, kCount, ncclFloat32, ncclSum, comm, s) == ncclSuccess) {
        status = 'r';
      }
    }
  }
  (void)!::write(ready_fd, &status, 1);
  for (;;) pause();
}

TEST(EmuNcclPeerDeath, KilledRankIsAnAsyncErrorOnTheSurvivors) {
  setenv("NCCL_EMU_BOOTSTRAP_TIMEOUT_S", "20", 1);  // a failed child must not cost the default 120 s
  const int me = world_rank(), n = world_size(), victim_rank = n;
  const bool parent = me == n - 1;
  int id_pipe[2] = {-1, -1}, ready_pipe[2] = {-1, -1};
  pid_t child = -1;
  if (parent) {
    ASSERT_EQ(::pipe(id_pipe), 0);
    ASSERT_EQ(::pipe(ready_pipe), 0);
    child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) victim(id_pipe[0], ready_pipe[1], victim_rank, n + 1);
    ::close(id_pipe[0]);
    ::close(ready_pipe[1]);
  }
  ASSERT_EQ(cudaSetDevice(node_local_rank()), cudaSuccess);
  ncclUniqueId id;
  ASSERT_EQ(broadcast_unique_id(id), ncclSuccess);
  if (parent) {
    ASSERT_EQ(::write(id_pipe[1], &id, sizeof id), static_cast<ssize_t>(sizeof id));
  }
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, n + 1, id, me), ncclSuccess) << ncclGetLastError(nullptr);

  DeviceBuffer buf(kCount * 4);
  Stream s;
  if (me == 0) stream_sleep(s, 1000);  // everyone else, the victim included, is inside the collective
  EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), kCount, ncclFloat32, ncclSum, comm, s), ncclSuccess);
  if (parent) {
    char status = 0;
    EXPECT_TRUE(read_all(ready_pipe[0], &status, 1) && status == 'r') << "the victim did not reach its all-reduce";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(child, SIGKILL);
    int wstatus = 0;
    EXPECT_EQ(::waitpid(child, &wstatus, 0), child);
    EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
    ::close(id_pipe[1]);
    ::close(ready_pipe[0]);
  }
  const bool finished = eventually([&] { return cudaStreamQuery(s) == cudaSuccess; }, 20.0);
  EXPECT_TRUE(finished) << "rank " << me << " still blocked 20 s after the victim died";
  ncclResult_t err = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &err), ncclSuccess);
  const std::string msg = ncclGetLastError(comm);
  EXPECT_TRUE(err == ncclRemoteError || err == ncclSystemError) << ncclGetErrorString(err) << ": " << msg;
  // The first rank to notice saw the victim's connection end and names it; the others may instead name
  // a survivor that shut its connections down on failing (that is how the failure spreads).
  const int names_victim = msg.find("connection to rank " + std::to_string(victim_rank)) != std::string::npos ? 1 : 0;
  int any_names_victim = 0;
  MPI_Allreduce(&names_victim, &any_names_victim, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(any_names_victim, 1) << "no survivor named the dead rank; this one says: " << msg;
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);  // also unblocks a stream that did hang
  s.sync();
}

}  // namespace
}  // namespace emu_test
