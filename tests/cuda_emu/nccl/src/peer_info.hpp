// peer_info.hpp — what every rank tells the others at ncclCommInitRank (through the bootstrap root):
// where it listens for data connections, and which host and GPU it is on (duplicate-GPU detection).
//
// Contract: a fixed-layout, trivially copyable record sent as raw bytes (host byte order: all ranks run
// this library on one architecture). `host_name` is NUL-terminated, truncated if needed.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

namespace cuda_emu::nccl {

struct PeerInfo {
  std::uint32_t ip = 0;  // data listener, network byte order
  std::uint16_t port = 0;
  std::uint16_t reserved = 0;
  std::int32_t rank = -1;
  std::int32_t device = -1;  // visible CUDA device index at ncclCommInitRank
  std::int32_t pid = 0;
  std::int32_t reserved2 = 0;
  std::uint64_t host_hash = 0;  // host_identity.hpp
  unsigned char uuid[16] = {};
  char host_name[64] = {};
};
static_assert(std::is_trivially_copyable_v<PeerInfo> && sizeof(PeerInfo) == 112, "PeerInfo is sent as raw bytes");

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints a UUID.
std::string uuid_string(const unsigned char (&uuid)[16]);
// "rank 2 (host node1, pid 1234, device 1)".
std::string describe_peer(const PeerInfo& p);

}  // namespace cuda_emu::nccl
