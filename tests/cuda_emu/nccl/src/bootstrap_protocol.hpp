// bootstrap_protocol.hpp — the messages of ncclCommInitRank's bootstrap (raw bytes, host byte order:
// every rank runs this library on the same architecture).
//
//   rank -> root   Hello: magic, the id's nonce, rank, nranks, the rank's PeerInfo.
//   root -> rank   Reply: magic, status (ncclResult_t), nranks, message length; then either nranks
//                  PeerInfo records (status ncclSuccess, in rank order) or the error message.
//   rank -> rank   Handshake, first bytes on every data connection: magic, nonce, from, to (the higher
//                  rank connects to the lower one).
// The nonce (from the unique id) ties every message to one communicator's bootstrap, so a stray or
// stale connection is recognised and dropped rather than taken for a rank.
#pragma once

#include <cstdint>
#include <type_traits>

#include "peer_info.hpp"

namespace cuda_emu::nccl {

inline constexpr std::uint64_t kBootstrapMagic = 0x746f6f426d657563ULL;  // "cuemBoot" in little-endian byte order

struct Hello {
  std::uint64_t magic = kBootstrapMagic;
  std::uint64_t nonce = 0;
  std::int32_t rank = -1;
  std::int32_t nranks = 0;
  PeerInfo info;
};

struct Reply {
  std::uint64_t magic = kBootstrapMagic;
  std::int32_t status = 0;  // ncclResult_t
  std::int32_t nranks = 0;
  std::uint32_t message_bytes = 0;
  std::uint32_t reserved = 0;
};

struct Handshake {
  std::uint64_t magic = kBootstrapMagic;
  std::uint64_t nonce = 0;
  std::int32_t from = -1;
  std::int32_t to = -1;
};

static_assert(std::is_trivially_copyable_v<Hello> && std::is_trivially_copyable_v<Reply> &&
              std::is_trivially_copyable_v<Handshake>);

}  // namespace cuda_emu::nccl
