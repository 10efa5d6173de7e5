// unique_id.cpp — ncclUniqueId encoding (unique_id.hpp).
#include "unique_id.hpp"

#include <cstring>

namespace cuda_emu::nccl {

namespace {

constexpr char kUniqueIdMagic[8] = {'c', 'u', 'e', 'm', 'N', 'C', 'C', 'L'};
constexpr std::size_t kVersionAt = 8, kNonceAt = 16, kIpAt = 24, kPortAt = 28, kUsedBytes = 30;
static_assert(kUsedBytes <= NCCL_UNIQUE_ID_BYTES);

void put_le(char* at, std::uint64_t v, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) at[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
std::uint64_t get_le(const char* at, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(at[i])) << (8 * i);
  return v;
}

}  // namespace

void encode_unique_id(const UniqueIdContents& c, ncclUniqueId& id) {
  std::memset(id.internal, 0, sizeof id.internal);
  std::memcpy(id.internal, kUniqueIdMagic, sizeof kUniqueIdMagic);
  put_le(id.internal + kVersionAt, NCCL_VERSION_CODE, 4);
  put_le(id.internal + kNonceAt, c.nonce, 8);
  std::memcpy(id.internal + kIpAt, &c.root.ip, 4);
  put_le(id.internal + kPortAt, c.root.port, 2);
}

bool decode_unique_id(const ncclUniqueId& id, UniqueIdContents& c) {
  if (std::memcmp(id.internal, kUniqueIdMagic, sizeof kUniqueIdMagic) != 0) return false;
  if (get_le(id.internal + kVersionAt, 4) != NCCL_VERSION_CODE) return false;
  if (get_le(id.internal + kVersionAt + 4, 4) != 0) return false;
  for (std::size_t i = kUsedBytes; i < sizeof id.internal; ++i) {
    if (id.internal[i] != 0) return false;
  }
  c.nonce = get_le(id.internal + kNonceAt, 8);
  std::memcpy(&c.root.ip, id.internal + kIpAt, 4);
  c.root.port = static_cast<std::uint16_t>(get_le(id.internal + kPortAt, 2));
  return c.root.port != 0;
}

}  // namespace cuda_emu::nccl
