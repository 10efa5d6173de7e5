// wire.hpp — the header that precedes every data message between two ranks, and how a receiver checks
// it against what it expects.
//
// Contract:
//   * A message is a Header followed by exactly `payload_bytes` bytes. Headers travel in host byte
//     order: every rank runs this library on the same architecture.
//   * The receiver reads the header first and compares it with the header it would have sent itself
//     (same kind, sequence number, count, dtype, op, root, step and payload size) before it reads any
//     payload: ranks that issued different operations (a desynchronisation) fail with a message naming
//     both ranks' operations instead of writing a wrong-sized payload into user memory.
//   * Sequence numbers: collectives count per communicator (every rank issues them in the same order);
//     point-to-point messages count per (sender, receiver) pair, so a ncclSend/ncclRecv pair matches
//     whether or not either side grouped it with other calls.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>

namespace cuda_emu::nccl {

enum class OpKind : std::uint8_t { AllReduce = 1, ReduceScatter, AllGather, Broadcast, Reduce, P2P };

// "cuem" in little-endian byte order: a stray or misaligned byte stream is caught at the first header.
inline constexpr std::uint32_t kHeaderMagic = 0x6d657563u;

struct Header {
  std::uint32_t magic = kHeaderMagic;
  std::uint8_t kind = 0;   // OpKind
  std::uint8_t step = 0;   // 1-based step of a collective's plan; 0 for point-to-point
  std::uint8_t dtype = 0;  // ncclDataType_t
  std::uint8_t op = 0;     // ncclRedOp_t; 0 where the operation has none
  std::int32_t root = -1;  // -1 where the operation has none
  std::int32_t from = -1;  // the sending rank
  std::uint64_t seq = 0;
  std::uint64_t count = 0;  // the count argument the sender's user passed
  std::uint64_t payload_bytes = 0;
  std::uint64_t reserved = 0;
};
static_assert(sizeof(Header) == 48, "the wire header is 48 bytes on every rank");

const char* kind_name(OpKind kind);
// "all-reduce #3 (count 1000, float32, sum)", "point-to-point message #0 (count 10, int32)".
std::string describe(const Header& h);
// Empty when `got` is what the receiver expected, else why not (names both ranks' operations).
std::string mismatch(const Header& expected, const Header& got, int me, int peer);

}  // namespace cuda_emu::nccl
