// errors.hpp — the CUDA runtime's error state as the emulator keeps it: the per-host-thread last
// error, sticky device faults, and the names and descriptions of the error codes.
// Contract (as the CUDA runtime documents it): every failing call records its error as the calling
// thread's last error; cudaGetLastError returns and clears it, cudaPeekAtLastError only returns it.
// A device fault (a kernel that failed) is sticky: from then on every call that uses the device
// returns it, and cudaGetLastError cannot clear it. Faults are printed to stderr when raised.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace cuda_emu {

void set_last_error(cudaError_t error);
cudaError_t peek_last_error();
cudaError_t take_last_error();

// Marks visible device `device` faulted (the first fault wins) and prints `message`.
void raise_fault(int device, cudaError_t error, const std::string& message);
cudaError_t device_fault(int device);
// The message of the first fault of any device, "" if none.
std::string first_fault_message();
// Test hook (cudaEmuClearFaults): the devices are usable again.
void clear_faults();

const char* error_name(cudaError_t error);
const char* error_string(cudaError_t error);

}  // namespace cuda_emu
