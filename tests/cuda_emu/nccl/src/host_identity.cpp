// host_identity.cpp — the host hash of duplicate-GPU detection (host_identity.hpp).
#include "host_identity.hpp"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace cuda_emu::nccl {

namespace {

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a 64-bit offset basis / prime
  for (const unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string link_target(const char* path) {
  std::array<char, 256> buf{};
  const ssize_t n = ::readlink(path, buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

HostIdentity this_host() {
  std::array<char, 256> host{};
  (void)::gethostname(host.data(), host.size() - 1);
  HostIdentity id;
  id.name = host.data();
  const char* override_id = std::getenv("NCCL_HOSTID");
  const std::string key = override_id != nullptr && *override_id != '\0'
                              ? std::string("hostid:") + override_id
                              : id.name + "\n" + read_first_line("/proc/sys/kernel/random/boot_id") + "\n" +
                                    link_target("/proc/self/ns/net");
  id.hash = fnv1a(key);
  return id;
}

}  // namespace cuda_emu::nccl
