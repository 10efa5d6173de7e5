// memory.cpp — the allocation registry (see memory.hpp).
#include "memory.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <vector>

#include "config.hpp"
#include "counters.hpp"
#include "errors.hpp"

namespace cuda_emu {

namespace {

// cudaMalloc returns memory aligned to at least 256 bytes (CUDA C Programming Guide, "Device Memory
// Accesses"); capacity is counted in the same unit.
constexpr std::size_t kAlignment = 256;
// One alignment unit behind every allocation: catches the usual off-by-one or off-by-a-few writes
// without doubling the size of small allocations.
constexpr std::size_t kRedZone = 256;
constexpr unsigned char kPoison = 0xFF;       // 0xFFFFFFFF is a NaN as float, -1 as integer
constexpr unsigned char kRedZoneByte = 0xA5;  // any pattern a kernel is unlikely to write

struct Allocation {
  MemoryKind kind;
  int device;
  std::size_t bytes;      // as requested
  std::size_t accounted;  // bytes rounded up to kAlignment (device capacity)
  bool releasing = false;
};

struct State {
  mutable std::shared_mutex mutex;
  std::map<std::uintptr_t, Allocation> allocations;                 // by base address
  std::vector<std::size_t> used = std::vector<std::size_t>(64, 0);  // per visible device (<= 64)
};

State& state() {
  // Never destroyed: a stream worker may still free memory (cudaFreeAsync) while the process exits.
  static State* s = new State();
  return *s;
}

std::size_t round_up(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// The allocation containing address p (callers hold the mutex).
const std::pair<const std::uintptr_t, Allocation>* find(const State& s, const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = s.allocations.upper_bound(a);
  if (it == s.allocations.begin()) return nullptr;
  --it;
  return a < it->first + it->second.bytes ? &*it : nullptr;
}

}  // namespace

Memory& Memory::get() {
  static Memory m;
  return m;
}

std::size_t Memory::capacity_bytes() const { return config().device_memory_bytes; }

cudaError_t Memory::allocate(MemoryKind kind, int device, std::size_t bytes, void** out) {
  State& s = state();
  const std::size_t accounted = round_up(bytes);
  if (accounted < bytes || accounted > std::numeric_limits<std::size_t>::max() - kRedZone) {
    return cudaErrorMemoryAllocation;
  }
  const std::size_t reserved = accounted + kRedZone;
  // Pinned memory is host memory, poisoned page by page: more than half of this machine's RAM
  // would end in the OOM killer, not in the error a real cudaMallocHost gives.
  static const std::size_t host_limit =
      static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) / 2;
  if (kind == MemoryKind::PinnedHost && reserved > host_limit) return cudaErrorMemoryAllocation;
  if (kind == MemoryKind::Device) {
    const std::unique_lock lock(s.mutex);
    const std::size_t used = s.used[static_cast<std::size_t>(device)];
    if (accounted > capacity_bytes() - used) return cudaErrorMemoryAllocation;  // used <= capacity always
    s.used[static_cast<std::size_t>(device)] += accounted;  // reserved before the (slow) host allocation
  }
  void* p = std::aligned_alloc(kAlignment, reserved);
  if (p == nullptr) {
    if (kind == MemoryKind::Device) {
      const std::unique_lock lock(s.mutex);
      s.used[static_cast<std::size_t>(device)] -= accounted;
    }
    return cudaErrorMemoryAllocation;
  }
  std::memset(p, kPoison, bytes);
  std::memset(static_cast<char*>(p) + bytes, kRedZoneByte, reserved - bytes);
  {
    const std::unique_lock lock(s.mutex);
    s.allocations[reinterpret_cast<std::uintptr_t>(p)] = Allocation{kind, device, bytes, accounted};
  }
  counters::allocated(kind == MemoryKind::PinnedHost, kind == MemoryKind::Device ? accounted : 0);
  *out = p;
  return cudaSuccess;
}

cudaError_t Memory::begin_release(void* base, MemoryKind kind, int* device) {
  State& s = state();
  const std::unique_lock lock(s.mutex);
  const auto it = s.allocations.find(reinterpret_cast<std::uintptr_t>(base));
  if (it == s.allocations.end() || it->second.kind != kind || it->second.releasing) return cudaErrorInvalidValue;
  it->second.releasing = true;
  *device = it->second.device;
  return cudaSuccess;
}

void Memory::finish_release(void* base) {
  State& s = state();
  Allocation a{};
  {
    const std::unique_lock lock(s.mutex);
    const auto it = s.allocations.find(reinterpret_cast<std::uintptr_t>(base));
    if (it == s.allocations.end()) return;
    a = it->second;
    s.allocations.erase(it);
    if (a.kind == MemoryKind::Device) s.used[static_cast<std::size_t>(a.device)] -= a.accounted;
  }
  const auto* bytes = static_cast<const unsigned char*>(base);
  const std::size_t reserved = a.accounted + kRedZone;
  for (std::size_t i = a.bytes; i < reserved; ++i) {
    if (bytes[i] != kRedZoneByte) {
      std::ostringstream os;
      os << "a write past the end of the " << a.bytes << "-byte allocation at " << base << ": byte " << i
         << " beyond its start was overwritten (found when it was freed)";
      raise_fault(a.device, cudaErrorIllegalAddress, os.str());
      break;
    }
  }
  std::free(base);
  counters::freed(a.kind == MemoryKind::PinnedHost, a.kind == MemoryKind::Device ? a.accounted : 0);
}

PointerInfo Memory::lookup(const void* p) const {
  const State& s = state();
  const std::shared_lock lock(s.mutex);
  const auto* entry = find(s, p);
  if (entry == nullptr) return PointerInfo{MemoryKind::Unregistered, -1, nullptr, 0};
  return PointerInfo{entry->second.kind, entry->second.device, reinterpret_cast<const void*>(entry->first),
                     entry->second.bytes};
}

PointerInfo Memory::lookup_range(const void* p, std::size_t bytes, bool* overrun) const {
  const PointerInfo info = lookup(p);
  *overrun = false;
  if (info.kind != MemoryKind::Unregistered) {
    const auto offset = static_cast<std::size_t>(static_cast<const char*>(p) - static_cast<const char*>(info.base));
    *overrun = bytes > info.bytes - offset;
  }
  return info;
}

std::size_t Memory::used_bytes(int device) const {
  const State& s = state();
  const std::shared_lock lock(s.mutex);
  return s.used[static_cast<std::size_t>(device)];
}

}  // namespace cuda_emu
