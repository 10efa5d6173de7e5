// emu_nccl_victim.cpp — helper of test_emu_nccl_peer_death: a rank that joins a communicator, enters an
// all-reduce, says so on stdout ("r"; "x" if it could not), and waits to be killed. No MPI, no gtest:
// the test spawns it as a fresh process (fork + exec), so it inherits no threads and no runtime state.
//
// Usage: emu_nccl_victim <unique id, 256 hex digits> <rank> <nranks> <device> <float count>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

constexpr unsigned kLifetimeS = 60;  // ends itself if nobody kills it (a failed test)

bool parse_id(const std::string& hex, ncclUniqueId& id) {
  if (hex.size() != 2 * sizeof id.internal) return false;
  for (std::size_t i = 0; i < sizeof id.internal; ++i) {
    id.internal[i] = static_cast<char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return true;
}

int report(char status, const char* why) {
  if (why != nullptr) std::fprintf(stderr, "emu_nccl_victim: %s: %s\n", why, ncclGetLastError(nullptr));
  (void)!::write(STDOUT_FILENO, &status, 1);
  return status == 'r' ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  alarm(kLifetimeS);
  ncclUniqueId id;
  if (argc != 6 || !parse_id(argv[1], id)) return report('x', "bad arguments");
  const int rank = std::atoi(argv[2]), nranks = std::atoi(argv[3]), device = std::atoi(argv[4]);
  const std::size_t count = std::strtoull(argv[5], nullptr, 10);
  if (cudaSetDevice(device) != cudaSuccess) return report('x', "cudaSetDevice");
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return report('x', "ncclCommInitRank");
  void* buf = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&buf, count * sizeof(float)) != cudaSuccess || cudaStreamCreate(&stream) != cudaSuccess) {
    return report('x', "cudaMalloc / cudaStreamCreate");
  }
  if (ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, stream) != ncclSuccess)
    return report('x', "ncclAllReduce");
  report('r', nullptr);
  for (;;) pause();
}
