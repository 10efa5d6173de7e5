// emu_internal.cpp — the runtime's internal API for the emulator's other libraries (see
// emu_internal.hpp).
#include "emu_internal.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "devices.hpp"
#include "memory.hpp"
#include "streams.hpp"

namespace cuda_emu {

void enqueue(cudaStream_t stream, const char* what, std::function<void()> fn) {
  CUstream_st* s = Engine::get().resolve(stream, current_device());
  if (s == nullptr) throw std::invalid_argument(std::string("cuda_emu::enqueue(") + what + "): invalid stream handle");
  Engine::get().enqueue(s, what, std::move(fn));
}

PointerInfo lookup_pointer(const void* p) { return Memory::get().lookup(p); }

std::array<unsigned char, 16> device_uuid(int device) { return visible_device_uuid(device); }

}  // namespace cuda_emu
