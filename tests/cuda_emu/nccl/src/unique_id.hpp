// unique_id.hpp — what the emulated NCCL puts in the 128-byte ncclUniqueId: a magic, the NCCL version
// code it was built against, a random nonce naming this communicator's bootstrap, and the bootstrap
// root's IPv4 endpoint.
//
// Layout (little-endian integers; the address as on the wire):
//   [0, 8)   kUniqueIdMagic "cuemNCCL"     [8, 12)  NCCL_VERSION_CODE     [12, 16) zero
//   [16, 24) nonce                         [24, 28) IPv4 (network order)  [28, 30) port
//   [30, 128) zero
// decode_unique_id() refuses anything else (an id from the real NCCL, a corrupted broadcast), so a
// wrong id is ncclInvalidArgument at ncclCommInitRank instead of a connection to a random address.
#pragma once

#include <nccl.h>

#include <cstdint>

#include "socket.hpp"

namespace cuda_emu::nccl {

struct UniqueIdContents {
  std::uint64_t nonce = 0;
  Endpoint root;
};

void encode_unique_id(const UniqueIdContents& contents, ncclUniqueId& id);
bool decode_unique_id(const ncclUniqueId& id, UniqueIdContents& contents);

}  // namespace cuda_emu::nccl
