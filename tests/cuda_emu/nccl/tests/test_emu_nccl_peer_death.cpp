// test_emu_nccl_peer_death.cpp — a rank that dies in the middle of a collective becomes an asynchronous
// error on the survivors, not a hang.
//
// The victim is an extra rank: the last MPI process spawns emu_nccl_victim (a fresh process, fork +
// exec, so it inherits no threads or runtime state), which joins the communicator as rank n, enters
// the all-reduce and is killed with SIGKILL while it and the other ranks are inside it (rank 0 holds
// its own part back behind a stream sleep, so nobody can finish early). MPI never sees the victim; the
// survivors must report ncclRemoteError or ncclSystemError, their streams held (as NCCL's kernels keep
// waiting on a GPU) until each aborts its communicator, which releases them.
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "emu_nccl_mpi.hpp"
#include "emu_nccl_test_util.hpp"

extern char** environ;

namespace emu_test {
namespace {

constexpr std::size_t kCount = 16u << 20;  // floats: 64 MiB, far more than socket buffers hold

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

std::string hex(const ncclUniqueId& id) {
  std::string s;
  char byte[3];
  for (char c : id.internal) {
    std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned char>(c));
    s += byte;
  }
  return s;
}

// Starts emu_nccl_victim with its stdout on `out_fd`; -1 on failure.
pid_t spawn_victim(const ncclUniqueId& id, int rank, int nranks, int device, int out_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  std::string args[] = {EMU_NCCL_VICTIM_PATH,   hex(id),
                        std::to_string(rank),   std::to_string(nranks),
                        std::to_string(device), std::to_string(kCount)};
  char* argv[] = {args[0].data(), args[1].data(), args[2].data(), args[3].data(),
                  args[4].data(), args[5].data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

TEST(EmuNcclPeerDeath, KilledRankIsAnAsyncErrorOnTheSurvivors) {
  setenv("NCCL_EMU_BOOTSTRAP_TIMEOUT_S", "20", 1);  // a failed child must not cost the default 120 s
  const int me = world_rank(), n = world_size(), victim_rank = n;
  const bool parent = me == n - 1;
  ASSERT_EQ(cudaSetDevice(node_local_rank()), cudaSuccess);
  ncclUniqueId id;
  ASSERT_EQ(broadcast_unique_id(id), ncclSuccess);
  int ready_pipe[2] = {-1, -1};
  pid_t child = -1;
  if (parent) {
    ASSERT_EQ(::pipe2(ready_pipe, O_CLOEXEC), 0);  // the victim gets only its stdout end
    // Device n: one past the node-local ranks' devices, so no duplicate GPU on a single host.
    child = spawn_victim(id, victim_rank, n + 1, n, ready_pipe[1]);
    ::close(ready_pipe[1]);
    ASSERT_GT(child, 0) << "cannot start " << EMU_NCCL_VICTIM_PATH;
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
    ::close(ready_pipe[0]);
  }
  // NCCL reports the failure asynchronously while its kernel keeps waiting: the stream completes only
  // after the abort below.
  ncclResult_t err = ncclSuccess;
  const bool reported =
      eventually([&] { return ncclCommGetAsyncError(comm, &err) == ncclSuccess && err != ncclSuccess; }, 20.0);
  EXPECT_TRUE(reported) << "rank " << me << ": no asynchronous error 20 s after the victim died";
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady) << "the failed all-reduce completed its stream before the abort";
  const std::string msg = ncclGetLastError(comm);
  EXPECT_TRUE(err == ncclRemoteError || err == ncclSystemError) << ncclGetErrorString(err) << ": " << msg;
  // The first rank to notice saw the victim's connection end and names it; the others may instead name
  // a survivor that shut its connections down on failing (that is how the failure spreads).
  const int names_victim = msg.find("connection to rank " + std::to_string(victim_rank)) != std::string::npos ? 1 : 0;
  int any_names_victim = 0;
  MPI_Allreduce(&names_victim, &any_names_victim, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(any_names_victim, 1) << "no survivor named the dead rank; this one says: " << msg;
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);  // releases the stream
  EXPECT_TRUE(eventually([&] { return cudaStreamQuery(s) == cudaSuccess; }, 2.0)) << "abort did not release the stream";
}

}  // namespace
}  // namespace emu_test
