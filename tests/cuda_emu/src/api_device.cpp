// api_device.cpp — the emulated CUDA runtime's device management, versions and error queries:
// cudaGetDeviceCount, cudaSetDevice/cudaGetDevice, cudaGetDeviceProperties,
// cudaDeviceGetStreamPriorityRange, cudaDeviceSynchronize, cudaMemGetInfo, cudaDriverGetVersion,
// cudaRuntimeGetVersion, cudaGetLastError/cudaPeekAtLastError, cudaGetErrorName/cudaGetErrorString.
// Contract: as documented for the CUDA runtime 13.0, over the devices of devices.hpp; every
// emulated device is an sm_90 part named "microddp emulated GPU ..." (so no log can mistake it for
// hardware) with CUDA_EMU_DEVICE_MEMORY_MB of memory.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "api_call.hpp"
#include "config.hpp"
#include "devices.hpp"
#include "errors.hpp"
#include "graph.hpp"
#include "memory.hpp"
#include "streams.hpp"

namespace {

using cuda_emu::api_call;
using cuda_emu::Needs;

// CUDA 13.0, encoded as 1000 * major + 10 * minor (the runtime's encoding).
constexpr int kVersion = 13000;

// Compute capability 9.0 (Hopper) with an H100 SXM's SM count and per-SM limits: plausible values
// for code that reads them; the emulator itself does not depend on them.
void fill_properties(cudaDeviceProp& p, int device) {
  std::memset(&p, 0, sizeof p);
  const int physical = cuda_emu::physical_index(device);
  std::snprintf(p.name, sizeof p.name, "microddp emulated GPU %d (CPU, tests/cuda_emu)", physical);
  const auto uuid = cuda_emu::visible_device_uuid(device);
  std::memcpy(p.uuid.bytes, uuid.data(), uuid.size());
  p.totalGlobalMem = cuda_emu::Memory::get().capacity_bytes();
  p.sharedMemPerBlock = 48 << 10;  // the default static limit per block
  p.sharedMemPerBlockOptin = 227 << 10;
  p.sharedMemPerMultiprocessor = 228 << 10;
  p.regsPerBlock = 65536;
  p.regsPerMultiprocessor = 65536;
  p.warpSize = 32;
  p.memPitch = 2147483647;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsDim[0] = 1024;
  p.maxThreadsDim[1] = 1024;
  p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 2147483647;
  p.maxGridSize[1] = 65535;
  p.maxGridSize[2] = 65535;
  p.totalConstMem = 64 << 10;
  p.major = 9;
  p.minor = 0;
  p.multiProcessorCount = 132;
  p.maxThreadsPerMultiProcessor = 2048;
  p.maxBlocksPerMultiProcessor = 32;
  p.concurrentKernels = 1;
  p.asyncEngineCount = 2;
  p.unifiedAddressing = 1;
  p.canMapHostMemory = 1;
  p.streamPrioritiesSupported = 1;
  p.memoryPoolsSupported = 1;
  p.pciBusID = physical;
  p.pciDeviceID = 0;
  p.pciDomainID = 0;
  p.hostNumaId = -1;
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  return api_call("cudaGetDeviceCount", Needs::Nothing, [&] {
    if (count == nullptr) return cudaErrorInvalidValue;
    *count = cuda_emu::visible_device_count();
    return cuda_emu::runtime_status();
  });
}

cudaError_t cudaSetDevice(int device) {
  return api_call("cudaSetDevice", Needs::Nothing, [&] {
    if (const cudaError_t e = cuda_emu::runtime_status(); e != cudaSuccess) return e;
    if (device < 0 || device >= cuda_emu::visible_device_count()) return cudaErrorInvalidDevice;
    cuda_emu::set_current_device(device);
    return cudaSuccess;
  });
}

cudaError_t cudaGetDevice(int* device) {
  return api_call("cudaGetDevice", Needs::Nothing, [&] {
    if (device == nullptr) return cudaErrorInvalidValue;
    if (const cudaError_t e = cuda_emu::runtime_status(); e != cudaSuccess) return e;
    *device = cuda_emu::current_device();
    return cudaSuccess;
  });
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  return api_call("cudaGetDeviceProperties", Needs::Nothing, [&] {
    if (prop == nullptr) return cudaErrorInvalidValue;
    if (const cudaError_t e = cuda_emu::runtime_status(); e != cudaSuccess) return e;
    if (device < 0 || device >= cuda_emu::visible_device_count()) return cudaErrorInvalidDevice;
    fill_properties(*prop, device);
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  return api_call("cudaDeviceGetStreamPriorityRange", Needs::Device, [&] {
    if (least != nullptr) *least = cuda_emu::kLeastStreamPriority;
    if (greatest != nullptr) *greatest = cuda_emu::kGreatestStreamPriority;
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceSynchronize(void) {
  return api_call("cudaDeviceSynchronize", Needs::Device, [&] {
    const int device = cuda_emu::current_device();
    // Refused (and the captures invalidated) while a stream of the device captures.
    if (const cudaError_t e = cuda_emu::Captures::get().check_device_wait(device, "cudaDeviceSynchronize");
        e != cudaSuccess) {
      return e;
    }
    auto& engine = cuda_emu::Engine::get();
    engine.wait_all(engine.device_tails(device), "cudaDeviceSynchronize");
    return cuda_emu::device_fault(device);  // a fault of the work just waited for
  });
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  return api_call("cudaMemGetInfo", Needs::Device, [&] {
    if (free_bytes == nullptr || total_bytes == nullptr) return cudaErrorInvalidValue;
    const auto& memory = cuda_emu::Memory::get();
    *total_bytes = memory.capacity_bytes();
    *free_bytes = memory.capacity_bytes() - memory.used_bytes(cuda_emu::current_device());
    return cudaSuccess;
  });
}

cudaError_t cudaDriverGetVersion(int* version) {
  return api_call("cudaDriverGetVersion", Needs::Nothing, [&] {
    if (version == nullptr) return cudaErrorInvalidValue;
    // As the real runtime: this asks the driver library for its version and succeeds even when the
    // driver cannot run this runtime (0 when no driver is installed at all).
    *version = cuda_emu::config().driver_version;
    return cudaSuccess;
  });
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  return api_call("cudaRuntimeGetVersion", Needs::Nothing, [&] {
    if (version == nullptr) return cudaErrorInvalidValue;
    *version = kVersion;
    return cudaSuccess;
  });
}

// A sticky fault cannot be cleared: it is returned again (as the CUDA runtime does).
cudaError_t cudaGetLastError(void) {
  const cudaError_t fault = cuda_emu::device_fault(cuda_emu::current_device());
  const cudaError_t last = cuda_emu::take_last_error();
  return fault != cudaSuccess ? fault : last;
}

cudaError_t cudaPeekAtLastError(void) {
  const cudaError_t fault = cuda_emu::device_fault(cuda_emu::current_device());
  return fault != cudaSuccess ? fault : cuda_emu::peek_last_error();
}

const char* cudaGetErrorName(cudaError_t error) { return cuda_emu::error_name(error); }

const char* cudaGetErrorString(cudaError_t error) { return cuda_emu::error_string(error); }

}  // extern "C"
