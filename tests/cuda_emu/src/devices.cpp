// devices.cpp — visible devices, UUIDs, the current device (see devices.hpp).
#include "devices.hpp"

#include <unistd.h>

#include <climits>
#include <cstdint>

#include "config.hpp"

namespace cuda_emu {

namespace {

thread_local int t_current_device = 0;

// FNV-1a, 64-bit (offset basis and prime from the FNV reference); two passes with different
// offsets give the 128 bits of a UUID.
std::uint64_t fnv1a(std::string_view bytes, std::uint64_t hash) {
  constexpr std::uint64_t kPrime = 0x100000001b3ull;
  for (const char ch : bytes) {
    hash ^= static_cast<unsigned char>(ch);
    hash *= kPrime;
  }
  return hash;
}

}  // namespace

cudaError_t runtime_status() {
  const Config& c = config();
  if (c.init_error != cudaSuccess) return c.init_error;
  if (c.visible.empty()) return cudaErrorNoDevice;
  return cudaSuccess;
}

int visible_device_count() { return runtime_status() == cudaSuccess ? static_cast<int>(config().visible.size()) : 0; }

int physical_index(int visible) { return config().visible.at(static_cast<std::size_t>(visible)); }

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

std::array<unsigned char, 16> uuid_for(std::string_view host, int physical) {
  const std::string key = std::string(host) + "/microddp-emulated-gpu/" + std::to_string(physical);
  constexpr std::uint64_t kOffsetBasis = 0xcbf29ce484222325ull;
  const std::uint64_t hi = fnv1a(key, kOffsetBasis);
  const std::uint64_t lo = fnv1a(key, hi ^ 0x9e3779b97f4a7c15ull);  // second pass seeded by the first
  std::array<unsigned char, 16> out{};
  for (int i = 0; i < 8; ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<unsigned char>(hi >> (8 * i));
    out[static_cast<std::size_t>(8 + i)] = static_cast<unsigned char>(lo >> (8 * i));
  }
  return out;
}

std::array<unsigned char, 16> visible_device_uuid(int visible) {
  static const std::string host = host_name();
  return uuid_for(host, physical_index(visible));
}

int current_device() { return t_current_device; }

void set_current_device(int visible) { t_current_device = visible; }

}  // namespace cuda_emu
