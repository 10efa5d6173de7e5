// errors.cpp — last error, sticky faults, error names (see errors.hpp).
#include "errors.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace cuda_emu {

namespace {

thread_local cudaError_t t_last_error = cudaSuccess;

// 64 = the largest CUDA_EMU_NODE_GPUS, so any visible index fits.
constexpr int kMaxDevices = 64;
std::atomic<int> g_fault[kMaxDevices] = {};  // cudaError_t of the device's first fault, 0 = none
std::mutex g_fault_mutex;
std::string g_first_fault_message;

struct ErrorText {
  cudaError_t error;
  const char* name;
  const char* text;
};

// The codes the emulator returns or a caller is likely to print, with the runtime's descriptions.
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorSystemDriverMismatch, "cudaErrorSystemDriverMismatch",
     "system has unsupported display driver / cuda driver combination"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotPermitted, "cudaErrorNotPermitted", "operation not permitted"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge",
     "operation would result in a merge of separate capture sequences"},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched",
     "capture was not ended in the same stream as it began"},
    {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined", "capturing stream has unjoined work"},
    {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation",
     "dependency created on uncaptured work in another stream"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent",
     "operation not permitted on an event last recorded in a capturing stream"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* find(cudaError_t error) {
  for (const ErrorText& e : kErrors) {
    if (e.error == error) return &e;
  }
  return nullptr;
}

}  // namespace

void set_last_error(cudaError_t error) { t_last_error = error; }

cudaError_t peek_last_error() { return t_last_error; }

cudaError_t take_last_error() {
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

void raise_fault(int device, cudaError_t error, const std::string& message) {
  std::fprintf(stderr, "cuda_emu: device %d fault (%s): %s\n", device, error_name(error), message.c_str());
  if (device < 0 || device >= kMaxDevices) return;
  int expected = 0;
  if (g_fault[device].compare_exchange_strong(expected, static_cast<int>(error))) {
    const std::lock_guard<std::mutex> lock(g_fault_mutex);
    if (g_first_fault_message.empty()) g_first_fault_message = message;
  }
}

cudaError_t device_fault(int device) {
  if (device < 0 || device >= kMaxDevices) return cudaSuccess;
  return static_cast<cudaError_t>(g_fault[device].load(std::memory_order_acquire));
}

std::string first_fault_message() {
  const std::lock_guard<std::mutex> lock(g_fault_mutex);
  return g_first_fault_message;
}

void clear_faults() {
  for (auto& f : g_fault) f.store(0);
  const std::lock_guard<std::mutex> lock(g_fault_mutex);
  g_first_fault_message.clear();
}

const char* error_name(cudaError_t error) {
  const ErrorText* e = find(error);
  return e != nullptr ? e->name : "cudaErrorUnknown";
}

const char* error_string(cudaError_t error) {
  const ErrorText* e = find(error);
  return e != nullptr ? e->text : "unrecognized error code";
}

}  // namespace cuda_emu
