// api_call.hpp — the checks every emulated CUDA runtime entry point shares.
// Contract: api_call(name, needs, body) refuses calls from a stream worker thread (a host function
// or kernel calling the CUDA API: cudaErrorNotPermitted, as CUDA forbids it); when `needs` is
// Device, returns the runtime's start-up error (CUDA_EMU_FAIL_INIT, no visible device) or the
// current device's sticky fault before running `body`; an error from any of these or from body
// becomes the calling thread's last error. std::bad_alloc from body is cudaErrorMemoryAllocation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <new>

#include "devices.hpp"
#include "errors.hpp"
#include "streams.hpp"

namespace cuda_emu {

enum class Needs { Nothing, Device };

template <typename Body>
cudaError_t api_call(const char* name, Needs needs, Body&& body) {
  cudaError_t err = cudaSuccess;
  if (Engine::on_worker_thread()) {
    std::fprintf(stderr, "cuda_emu: %s called from a stream worker (a host function or kernel): not permitted\n", name);
    err = cudaErrorNotPermitted;
  } else if (needs == Needs::Device && (err = runtime_status()) == cudaSuccess) {
    err = device_fault(current_device());
  }
  if (err == cudaSuccess) {
    try {
      err = body();
    } catch (const std::bad_alloc&) {
      err = cudaErrorMemoryAllocation;
    }
  }
  if (err != cudaSuccess) set_last_error(err);
  return err;
}

}  // namespace cuda_emu
