// emu_internal.hpp — what the emulated CUDA runtime offers the emulator's other libraries (the
// emulated NCCL, tests/cuda_emu/nccl) beyond the CUDA API. Not for product code.
// Contract:
//  * enqueue(stream, what, fn): `fn` runs on `stream`'s worker thread (nullptr = the legacy default
//    stream of the calling thread's current device) in order with every other operation of that
//    stream, after the work it must wait for under the legacy-stream rules, and after
//    CUDA_EMU_STREAM_DELAY_US; `what` names it in diagnostics. fn may block (e.g. waiting for
//    peers) but must not call the CUDA runtime API (a worker thread gets cudaErrorNotPermitted). An
//    exception escaping fn faults the stream's device (sticky cudaErrorLaunchFailure, message
//    printed). An invalid stream handle throws std::invalid_argument; a stream that is capturing
//    throws std::logic_error (use capture_operation first).
//  * capture_operation(streams, what, prepare, serial, &recorded): stream capture (graph.hpp) for
//    work on one or more streams. When none of them captures: *recorded = false and the caller
//    enqueues as usual. When all capture in one sequence: one graph node after every stream's
//    current dependencies (they then all depend on it), *recorded = true; at each launch of a graph
//    holding it `prepare` runs on the host, in launch order, and the function it returns runs when
//    the node executes. Nodes with the same non-null `serial` key run in capture order whatever
//    the schedule (one NCCL communicator's operations). Errors (cudaError_t): a mix of capturing
//    and other streams or of two captures (cudaErrorStreamCaptureIsolation), an invalidated capture
//    (cudaErrorStreamCaptureInvalidated), the legacy stream while a blocking stream captures
//    (cudaErrorStreamCaptureImplicit), an invalid stream handle (cudaErrorInvalidResourceHandle).
//  * lookup_pointer(p): the allocation p points into (any byte of it), or {Unregistered, -1,
//    nullptr, 0} for memory the runtime did not allocate. `device` is the visible index the memory
//    belongs to (for pinned host memory: the device current when it was allocated).
//  * current_device(): cudaGetDevice of the calling host thread (a visible index).
//  * device_uuid(device): the UUID cudaGetDeviceProperties reports for visible device `device`.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <functional>
#include <vector>

namespace cuda_emu {
// Enqueues `fn` on `stream` (nullptr = legacy default stream) with the same ordering rules as any
// stream operation (after earlier work on that stream, legacy-stream semantics, delay); `what` names
// it in diagnostics. fn runs on the stream's worker thread and may block (e.g. waiting for peers).
void enqueue(cudaStream_t stream, const char* what, std::function<void()> fn);
cudaError_t capture_operation(const std::vector<cudaStream_t>& streams, const char* what,
                              std::function<std::function<void()>()> prepare, const void* serial, bool* recorded);
enum class MemoryKind { Device, PinnedHost, Unregistered };
struct PointerInfo {
  MemoryKind kind;
  int device;
  const void* base;
  std::size_t bytes;
};
PointerInfo lookup_pointer(const void* p);              // any address inside an allocation; Unregistered otherwise
int current_device();                                   // cudaGetDevice of the calling host thread (visible index)
std::array<unsigned char, 16> device_uuid(int device);  // of a visible device index
}  // namespace cuda_emu
