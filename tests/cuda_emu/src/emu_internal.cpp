// emu_internal.cpp — the runtime's internal API for the emulator's other libraries (see
// emu_internal.hpp).
#include "emu_internal.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "devices.hpp"
#include "graph.hpp"
#include "memory.hpp"
#include "streams.hpp"

namespace cuda_emu {

void enqueue(cudaStream_t stream, const char* what, std::function<void()> fn) {
  CUstream_st* s = Engine::get().resolve(stream, current_device());
  if (s == nullptr) throw std::invalid_argument(std::string("cuda_emu::enqueue(") + what + "): invalid stream handle");
  if (Captures::get().in_capture(s)) {
    throw std::logic_error(std::string("cuda_emu::enqueue(") + what + "): the stream is capturing");
  }
  Engine::get().enqueue(s, what, std::move(fn));
}

cudaError_t capture_operation(const std::vector<cudaStream_t>& streams, const char* what,
                              std::function<std::function<void()>()> prepare, const void* serial, bool* recorded) {
  std::vector<CUstream_st*> resolved;
  for (cudaStream_t stream : streams) {
    CUstream_st* s = Engine::get().resolve(stream, current_device());
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    resolved.push_back(s);
  }
  NodeSpec node;
  node.work = NodeWork::Collective;
  node.what = what;
  node.prepare = std::move(prepare);
  node.serial = serial;
  return Captures::get().record_joined(resolved, std::move(node), recorded);
}

PointerInfo lookup_pointer(const void* p) { return Memory::get().lookup(p); }

std::array<unsigned char, 16> device_uuid(int device) { return visible_device_uuid(device); }

}  // namespace cuda_emu
