// aligned_alloc.hpp — zero-filled, aligned host memory: the one allocation routine behind the host
// buffers (HostBuffer), the CPU "device" memory (CpuOps::allocate_bytes) and host staging
// (Ops::allocate_host_bytes). Release with std::free.
// Contract: nullptr for 0 bytes; otherwise `bytes` rounded up to `alignment` (std::aligned_alloc's
// rule), all zero (all-zero bits are 0 for every dtype); throws core::Error naming `what` and the size
// when the request cannot be met (out of memory, or more than any host object may hold).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"

namespace microddp::core {

inline void* aligned_zeroed_alloc(std::size_t bytes, std::size_t alignment, const char* what) {
  if (bytes == 0) return nullptr;
  // No object may exceed PTRDIFF_MAX bytes (glibc refuses such requests); checking here also keeps
  // the rounding below from overflowing.
  MDDP_CHECK(bytes <= static_cast<std::size_t>(PTRDIFF_MAX) - (alignment - 1),
             what << ": " << bytes << " bytes is more than any host object can hold");
  const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  MDDP_CHECK(p != nullptr, what << ": out of host memory allocating " << bytes << " bytes");
  std::memset(p, 0, rounded);
  return p;
}

}  // namespace microddp::core
