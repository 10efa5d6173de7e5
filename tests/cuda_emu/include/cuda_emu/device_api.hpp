// device_api.hpp — the interface between emulated device code and the emulator's runtime: the
// built-in index variables, the synchronisation primitives, and the type-erased kernel launch.
// Included by device_prelude.hpp (kernel translation units) and by the runtime that implements it.
// Contract: the index variables are per OS thread and set by the runtime before every CUDA thread
// runs (or resumes); the primitives (and atomics) may only be called from inside a running kernel; launch()
// behaves as a <<<...>>> launch: it checks the configuration (the calling thread's last error says
// why a launch was refused), then enqueues the kernel on the stream and returns.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

// CUDA's built-in variables. `__thread` rather than thread_local: constant-initialised, so every
// read is one %fs-relative load (thread_local of an extern variable goes through an init wrapper).
extern __thread uint3 threadIdx;
extern __thread uint3 blockIdx;
extern __thread dim3 blockDim;
extern __thread dim3 gridDim;

namespace cuda_emu::device {

// A kernel with its arguments bound (copied at launch, as a real launch copies them).
class KernelBody {
 public:
  virtual ~KernelBody() = default;
  // Runs one CUDA thread to completion; the index variables are already set.
  virtual void run_thread() const = 0;
  // Runs the given threads one after another as plain calls, setting threadIdx for each (a kernel
  // that never synchronises needs no fibers).
  virtual void run_threads(const uint3* threads, std::size_t count) const = 0;
};

// A pointer argument of a launch: checked against the allocation registry (a host pointer handed to
// a kernel would fault on a GPU).
struct PointerArg {
  unsigned index;  // position in the kernel's parameter list
  const void* value;
};

// A launch as the runtime receives it. `kernel_id` identifies the kernel (one per instantiation),
// `kernel_name` is its source spelling, for diagnostics.
struct LaunchRequest {
  const void* kernel_id;
  const char* kernel_name;
  dim3 grid;
  dim3 block;
  std::size_t shared_bytes;
  cudaStream_t stream;
  const PointerArg* pointers;
  std::size_t pointer_count;
};

void launch(const LaunchRequest& request, std::unique_ptr<KernelBody> body);

// The warp exchanges behind __shfl*_sync and __syncwarp; values travel as 64 raw bits.
enum class WarpOp : unsigned char { Sync, ShuffleIndex, ShuffleUp, ShuffleDown, ShuffleXor };

void sync_threads();
std::uint64_t warp_exchange(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width);

// Called by every atomic read-modify-write (atomicAdd) before it runs: a kernel must be running
// (else the process aborts, as for the other primitives), `address` must be aligned to `bytes` (a
// GPU faults with a misaligned address; here the launch faults, naming the thread), and the
// operation is counted (cudaEmuCounters::atomic_operations). Atomics never switch fibers: a kernel
// that only uses atomics still runs as plain calls.
void atomic_access(const void* address, std::size_t bytes, const char* primitive);

}  // namespace cuda_emu::device
