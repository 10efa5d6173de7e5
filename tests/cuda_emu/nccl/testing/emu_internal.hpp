// emu_internal.hpp — TEST-ONLY copy of the emulated CUDA runtime's internal API, as agreed with the
// runtime's author (the real header is tests/cuda_emu/src/emu_internal.hpp, part of the
// `cuda_emu_runtime` target). Only the stand-in build (CMakeLists.txt: `if(NOT TARGET cuda_emu_runtime)`)
// puts this folder on the include path; with the real runtime this file is not seen. Keep it identical
// to the agreed declarations: cuda_emu_nccl is written against exactly these.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <functional>

namespace cuda_emu {
// Enqueues `fn` on `stream` (nullptr = legacy default stream) with the same ordering rules as any
// stream operation; `what` names it in diagnostics. fn runs on the stream's worker thread and may block.
void enqueue(cudaStream_t stream, const char* what, std::function<void()> fn);
enum class MemoryKind { Device, PinnedHost, Unregistered };
struct PointerInfo {
  MemoryKind kind;
  int device;
  const void* base;
  std::size_t bytes;
};
PointerInfo lookup_pointer(const void* p);  // any address inside an allocation; Unregistered otherwise
int current_device();                       // cudaGetDevice of the calling host thread (visible index)
std::array<unsigned char, 16> device_uuid(int device);  // of a visible device index
}  // namespace cuda_emu
