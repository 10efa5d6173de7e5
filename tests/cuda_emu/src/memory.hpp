// memory.hpp — the emulated device's memory: every allocation the runtime hands out (device memory
// and pinned host memory), in a registry that answers "what is this pointer" for any address.
// Contract: allocations are 256-byte aligned (cudaMalloc's documented alignment) and filled with
// 0xFF bytes (NaN for floats, -1 for integers), so code that assumes zeroed memory fails; device
// memory counts against its device's capacity (CUDA_EMU_DEVICE_MEMORY_MB, in 256-byte units).
// Behind each allocation lies a 256-byte red zone of a known pattern, checked when the allocation is
// freed: a kernel that wrote past the end faults the device (cudaErrorIllegalAddress) then.
// Pinned host memory is limited to half of this machine's RAM. Thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "emu_internal.hpp"

namespace cuda_emu {

class Memory {
 public:
  static Memory& get();

  // `bytes` > 0. Device memory of visible device `device`, or pinned host memory (device = the
  // device current at the call). cudaErrorMemoryAllocation when the device is full.
  cudaError_t allocate(MemoryKind kind, int device, std::size_t bytes, void** out);
  // `base` must be the start of an allocation of `kind` not already being freed; marks it so (a
  // second free is then cudaErrorInvalidValue) and returns its device in *device.
  cudaError_t begin_release(void* base, MemoryKind kind, int* device);
  // Unregisters and frees an allocation begin_release accepted; checks its red zone.
  void finish_release(void* base);

  PointerInfo lookup(const void* p) const;
  // The allocation holding all of [p, p + bytes) (bytes > 0): kind Unregistered if p is not in
  // one; *overrun = true if p is in one but the range runs past its end.
  PointerInfo lookup_range(const void* p, std::size_t bytes, bool* overrun) const;

  std::size_t used_bytes(int device) const;
  std::size_t capacity_bytes() const;

 private:
  Memory() = default;
};

}  // namespace cuda_emu
