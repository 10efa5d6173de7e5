// nccl_setup.hpp — pure host-side helpers of the NCCL backends' start-up, free of NCCL and CUDA
// headers so the CPU unit tests check them (tests/comm/gpu/test_nccl_host.cpp).
//
// Contract:
//   * UniqueIdMessage is what rank 0 broadcasts (MPI_BYTE) to create the NCCL communicator: the
//     opaque ncclUniqueId bytes plus what every rank must agree on before ncclCommInitRank, which
//     otherwise fails obscurely or hangs: the world size, the NCCL version (mixed installations),
//     and a checksum over all of it (a truncated or mismatched broadcast is caught, not trusted).
//     check_unique_id_message() throws core::Error naming the first disagreement.
//   * nccl_device_for_rank() picks the GPU of a rank: its node-local rank modulo the GPUs this
//     process sees. With `srun --gpus-per-task=1` (our multi-node job script) every rank sees exactly
//     one GPU, device 0, and the ranks are on different GPUs; with two ranks on a one-GPU machine both
//     also pick device 0 but share it. The index alone cannot tell these apart, so the NCCL backends
//     then compare the GPUs' UUIDs across ranks (gpu_sharing.hpp) and refuse real sharing, which
//     NCCL does not support, with a message naming the ranks.
//   * nccl_capture_obstacle() says why a version of NCCL cannot be captured into a CUDA graph
//     (before 2.9.6, NCCL's collectives are not capturable: its release notes for 2.9.6 add CUDA
//     graph support), "" when it can.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "core/hash.hpp"

namespace microddp::comm {

// NCCL_UNIQUE_ID_BYTES in nccl.h (static_assert'ed where nccl.h is included).
inline constexpr std::size_t kNcclUniqueIdBytes = 128;

struct UniqueIdMessage {
  std::array<char, kNcclUniqueIdBytes> id{};
  std::int32_t world_size = 0;
  std::int32_t nccl_version = 0;  // NCCL_VERSION_CODE of the sender's library (ncclGetVersion)
  std::uint64_t checksum = 0;     // FNV-1a over id, world_size and nccl_version
};

inline std::uint64_t unique_id_checksum(const UniqueIdMessage& m) {
  std::uint64_t h = core::fnv1a64(m.id.data(), m.id.size());
  h = core::fnv1a64(&m.world_size, sizeof m.world_size, h);
  return core::fnv1a64(&m.nccl_version, sizeof m.nccl_version, h);
}

inline UniqueIdMessage make_unique_id_message(const char* id_bytes, int world_size, int nccl_version) {
  UniqueIdMessage m;
  std::memcpy(m.id.data(), id_bytes, kNcclUniqueIdBytes);
  m.world_size = world_size;
  m.nccl_version = nccl_version;
  m.checksum = unique_id_checksum(m);
  return m;
}

// Run by every rank on the received message with its own view of the world.
inline void check_unique_id_message(const UniqueIdMessage& m, int world_size, int nccl_version) {
  MDDP_CHECK(m.checksum == unique_id_checksum(m),
             "nccl: the unique id received from rank 0 is corrupt (checksum mismatch)");
  MDDP_CHECK(m.world_size == world_size,
             "nccl: rank 0 created the unique id for " << m.world_size << " ranks, this rank sees " << world_size);
  MDDP_CHECK(m.nccl_version == nccl_version, "nccl: rank 0 runs NCCL version code " << m.nccl_version << ", this rank "
                                                                                    << nccl_version
                                                                                    << " (mixed installations)");
}

// The first NCCL whose collectives can be captured into a CUDA graph (version code 2.9.6).
inline constexpr int kNcclFirstCapturableVersion = 20906;

inline std::string nccl_capture_obstacle(int nccl_version) {
  if (nccl_version >= kNcclFirstCapturableVersion) return {};
  return "NCCL " + std::to_string(nccl_version / 10000) + "." + std::to_string(nccl_version / 100 % 100) + "." +
         std::to_string(nccl_version % 100) + " cannot capture collectives into a CUDA graph (2.9.6 or later can)";
}

// GPU index of a rank (see the contract above): node-local rank modulo the visible GPUs.
inline int nccl_device_for_rank(int local_rank, int local_size, int device_count) {
  MDDP_USAGE_CHECK(device_count >= 1, "nccl: no CUDA device visible to this process (CUDA_VISIBLE_DEVICES, driver?)");
  MDDP_CHECK(local_rank >= 0 && local_rank < local_size, "nccl: local rank " << local_rank << " of " << local_size);
  return local_rank % device_count;
}

}  // namespace microddp::comm
