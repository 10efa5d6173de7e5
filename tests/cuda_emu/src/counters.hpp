// counters.hpp — the runtime's side of cuda_emu/counters.h: one call per counted event.
// Contract: thread-safe (relaxed atomics; the per-API host-sync breakdown under a mutex); callers
// count an operation when the API accepts it, before it runs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuda_emu::counters {

enum class Copy {
  HostToDevicePageable,
  HostToDevicePinned,
  DeviceToHostPageable,
  DeviceToHostPinned,
  DeviceToDevice,
  HostToHost
};

void host_sync(const char* what);
void kernel_launch();
void gemm();
void lt_matmul(bool with_algo);  // a cublasLtMatmul (also counted by gemm())
// A cublasLtMatmulAlgoGetHeuristic that succeeded: whether it found an algorithm, and the workspace
// preference it carried.
void lt_heuristic(bool found, std::uint64_t workspace_preference_bytes);
void graph_priorities_dropped();  // a cudaGraphInstantiate that drops its nodes' stream priorities
void host_function();
void stream_event_wait();
void copy(Copy kind, std::size_t bytes);
void memset(std::size_t bytes);
void allocated(bool pinned, std::size_t device_bytes);
void freed(bool pinned, std::size_t device_bytes);
void blocks(bool fibers, std::uint64_t count);
void atomic_operation();  // one atomicAdd, from device code

// CUDA graphs: a cudaGraphLaunch accepted, an operation recorded into a capture instead of run, a
// node replayed by a launch (counted when its launch is accepted; its copy or memset bytes go to
// copy() / memset() then, as the launch issues them).
enum class Replayed { Kernel, Gemm, Other };
void graph_launch();
void captured_operation();
void replayed_node(Replayed kind);

// Prints every counter and the host-synchronisation breakdown to stderr (CUDA_EMU_REPORT=1 does at
// exit, for a quick look at what a program does on the device).
void print_report();

}  // namespace cuda_emu::counters
