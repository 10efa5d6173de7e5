// api_memory.cpp — the emulated CUDA runtime's memory calls: cudaMalloc/cudaFree,
// cudaMallocHost/cudaHostAlloc/cudaFreeHost, cudaMallocAsync/cudaFreeAsync, cudaMemcpy(Async),
// cudaMemset(Async), cudaPointerGetAttributes.
// Contract: the CUDA runtime's documented behaviour ("API synchronization behavior"), stricter where
// a GPU would let a bug pass:
//  * copy directions are checked against the allocation registry (cudaMemcpyDefault infers them):
//    a wrong direction, or a range running past the end of an allocation, is cudaErrorInvalidValue
//    with a message on stderr;
//  * cudaMemcpy: host->device from pageable memory waits for the legacy stream's earlier work,
//    stages the bytes and returns before they land; from pinned memory, device->host and
//    host->host it returns when the copy is done; device->device does not wait;
//  * cudaMemcpyAsync: pageable host->device stages the bytes at the call and returns;
//    device->pageable host and host->host return when done; everything else is fully asynchronous;
//  * cudaMemset is asynchronous for device memory (legacy stream) and synchronous for pinned host
//    memory; cudaMemsetAsync is always asynchronous; pageable host memory is refused;
//  * cudaFree waits for the memory's device (documented); so does cudaFreeHost (an emulator choice:
//    undocumented either way, and a pending copy then never reads freed memory); cudaFreeAsync
//    frees in stream order.
// Every wait is counted as a host synchronisation (cuda_emu/counters.h).
// Stream capture (graph.hpp): cudaMemcpyAsync / cudaMemsetAsync on a capturing stream become graph
// nodes (device and pinned memory only: a copy of pageable memory is refused, it needs the host at
// the call); allocation, free and the synchronous cudaMemcpy / cudaMemset are "potentially unsafe"
// calls, refused when a capture mode prohibits them; stream-ordered allocation inside a capture
// (graph memory nodes) is not emulated and refused.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api_call.hpp"
#include "counters.hpp"
#include "devices.hpp"
#include "graph.hpp"
#include "memory.hpp"
#include "streams.hpp"

namespace {

using cuda_emu::api_call;
using cuda_emu::Captures;
using cuda_emu::CompletionPtr;
using cuda_emu::Engine;
using cuda_emu::Memory;
using cuda_emu::MemoryKind;
using cuda_emu::Needs;
using cuda_emu::PointerInfo;

const char* kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::Device:
      return "device memory";
    case MemoryKind::PinnedHost:
      return "pinned host memory";
    case MemoryKind::Unregistered:
      return "pageable host memory";
  }
  return "?";
}

const char* memcpy_kind_name(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost:
      return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice:
      return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost:
      return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice:
      return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault:
      return "cudaMemcpyDefault";
  }
  return "?";
}

cudaError_t misuse(const char* api, const std::string& what) {
  std::fprintf(stderr, "cuda_emu: %s: %s\n", api, what.c_str());
  return cudaErrorInvalidValue;
}

// One side of a copy or memset, checked against the registry.
struct Side {
  PointerInfo info;
  bool device() const { return info.kind == MemoryKind::Device; }
};

cudaError_t check_range(const char* api, const char* role, const void* p, std::size_t bytes, Side& side) {
  bool overrun = false;
  side.info = Memory::get().lookup_range(p, bytes, &overrun);
  if (overrun) {
    return misuse(api, std::string(role) + " range of " + std::to_string(bytes) + " bytes runs past the end of its " +
                           std::to_string(side.info.bytes) + "-byte allocation (" + kind_name(side.info.kind) + ")");
  }
  return cudaSuccess;
}

// A validated copy: direction known, sides classified.
struct CopyPlan {
  Side src, dst;
};

cudaError_t plan_copy(const char* api, void* dst, const void* src, std::size_t count, cudaMemcpyKind kind,
                      CopyPlan& plan) {
  if (dst == nullptr || src == nullptr) return misuse(api, "null pointer");
  if (kind != cudaMemcpyHostToHost && kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost &&
      kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return cudaErrorInvalidMemcpyDirection;
  }
  if (const cudaError_t e = check_range(api, "source", src, count, plan.src); e != cudaSuccess) return e;
  if (const cudaError_t e = check_range(api, "destination", dst, count, plan.dst); e != cudaSuccess) return e;
  if (kind == cudaMemcpyDefault) return cudaSuccess;
  const bool want_src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const bool want_dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  if (plan.src.device() != want_src_device || plan.dst.device() != want_dst_device) {
    return misuse(api, std::string(memcpy_kind_name(kind)) + " from " + kind_name(plan.src.info.kind) + " to " +
                           kind_name(plan.dst.info.kind) + " (wrong direction)");
  }
  return cudaSuccess;
}

cuda_emu::counters::Copy counted_kind(const CopyPlan& p) {
  using C = cuda_emu::counters::Copy;
  if (p.src.device() && p.dst.device()) return C::DeviceToDevice;
  if (p.dst.device())
    return p.src.info.kind == MemoryKind::PinnedHost ? C::HostToDevicePinned : C::HostToDevicePageable;
  if (p.src.device())
    return p.dst.info.kind == MemoryKind::PinnedHost ? C::DeviceToHostPinned : C::DeviceToHostPageable;
  return C::HostToHost;
}

// Queues the copy on `stream` and applies the host-synchronisation rule of cudaMemcpy (sync) or
// cudaMemcpyAsync (!sync).
cudaError_t run_copy(const char* api, CUstream_st* stream, void* dst, const void* src, std::size_t count,
                     const CopyPlan& plan, bool sync) {
  using C = cuda_emu::counters::Copy;
  const C kind = counted_kind(plan);
  cuda_emu::counters::copy(kind, count);
  Engine& engine = Engine::get();
  if (kind == C::HostToDevicePageable) {
    // Staged at the call: the caller may reuse its buffer as soon as we return.
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + count);
    std::vector<CompletionPtr> before;
    if (sync) before = engine.implicit_deps(stream);  // "a stream sync is performed before the copy"
    engine.enqueue(stream, api, [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
    if (sync) engine.wait_all(before, "cudaMemcpy(pageable host->device)");
    return cudaSuccess;
  }
  const CompletionPtr done = engine.enqueue(stream, api, [dst, src, count] { std::memmove(dst, src, count); });
  const char* wait_label = nullptr;
  if (sync) {
    if (kind == C::HostToDevicePinned) wait_label = "cudaMemcpy(pinned host->device)";
    if (kind == C::DeviceToHostPinned || kind == C::DeviceToHostPageable) wait_label = "cudaMemcpy(device->host)";
    if (kind == C::HostToHost) wait_label = "cudaMemcpy(host->host)";
  } else {
    if (kind == C::DeviceToHostPageable) wait_label = "cudaMemcpyAsync(device->pageable host)";
    if (kind == C::HostToHost) wait_label = "cudaMemcpyAsync(host->host)";
  }
  if (wait_label != nullptr) engine.wait(done, wait_label);
  return cudaSuccess;
}

CUstream_st* resolve(cudaStream_t stream) { return Engine::get().resolve(stream, cuda_emu::current_device()); }

// cudaMemcpyAsync into a capture: a memcpy node of device / pinned memory.
cudaError_t capture_copy(CUstream_st* stream, void* dst, const void* src, std::size_t count, const CopyPlan& plan) {
  if (plan.src.info.kind == MemoryKind::Unregistered || plan.dst.info.kind == MemoryKind::Unregistered) {
    return Captures::get().refuse(stream, cudaErrorStreamCaptureUnsupported, "cudaMemcpyAsync",
                                  "copies pageable host memory inside a capture (a graph copies device and pinned "
                                  "memory only)");
  }
  cuda_emu::NodeSpec node;
  node.work = cuda_emu::NodeWork::Memcpy;
  node.what = "cudaMemcpyAsync";
  node.copy = counted_kind(plan);
  node.bytes = count;
  const int device = stream->device;
  node.prepare = [device, dst, src, count]() -> cuda_emu::NodeRun {
    if (!cuda_emu::still_allocated(device, src, count, "cudaMemcpyAsync source") ||
        !cuda_emu::still_allocated(device, dst, count, "cudaMemcpyAsync destination")) {
      return nullptr;
    }
    return [dst, src, count] { std::memmove(dst, src, count); };
  };
  return Captures::get().record(stream, std::move(node));
}

// Synchronous copies and memsets use the legacy stream and block the host: refused while a
// blocking stream captures, and where a capture mode prohibits potentially unsafe calls.
cudaError_t check_synchronous(const char* api) {
  bool capturing = false;
  if (const cudaError_t e = Captures::get().issue_check(resolve(nullptr), &capturing, api); e != cudaSuccess) return e;
  return Captures::get().check_unsafe(api);
}

// cudaMallocAsync / cudaFreeAsync: nothing for a capturing stream (graph memory nodes).
cudaError_t check_stream_ordered_memory(CUstream_st* s, const char* api) {
  bool capturing = false;
  if (const cudaError_t e = Captures::get().issue_check(s, &capturing, api); e != cudaSuccess) return e;
  if (!capturing) return cudaSuccess;
  return Captures::get().refuse(s, cudaErrorStreamCaptureUnsupported, api,
                                "stream-ordered allocation inside a capture (graph memory nodes) is not emulated");
}

// Waits for all work of visible device `device` (what cudaFree documents), counted as `what`.
void synchronize_device(int device, const char* what) {
  Engine& engine = Engine::get();
  engine.wait_all(engine.device_tails(device), what);
}

cudaError_t host_alloc(const char* api, void** ptr, std::size_t size, unsigned flags) {
  if (ptr == nullptr) return cudaErrorInvalidValue;
  if (const cudaError_t e = Captures::get().check_unsafe(api); e != cudaSuccess) return e;
  if ((flags & ~unsigned{cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined}) != 0) {
    return misuse(api, "unknown flags " + std::to_string(flags));
  }
  *ptr = nullptr;
  if (size == 0) return cudaSuccess;
  return Memory::get().allocate(MemoryKind::PinnedHost, cuda_emu::current_device(), size, ptr);
}

cudaError_t memset_on(const char* api, CUstream_st* stream, void* dst, int value, std::size_t count, bool sync) {
  bool capturing = false;
  if (const cudaError_t e = Captures::get().issue_check(stream, &capturing, api); e != cudaSuccess) return e;
  if (count == 0) return cudaSuccess;
  if (dst == nullptr) return misuse(api, "null pointer");
  Side side;
  if (const cudaError_t e = check_range(api, "destination", dst, count, side); e != cudaSuccess) return e;
  if (side.info.kind == MemoryKind::Unregistered) return misuse(api, "destination is pageable host memory");
  if (capturing) {
    cuda_emu::NodeSpec node;
    node.work = cuda_emu::NodeWork::Memset;
    node.what = api;
    node.bytes = count;
    const int device = stream->device;
    node.prepare = [device, dst, value, count]() -> cuda_emu::NodeRun {
      if (!cuda_emu::still_allocated(device, dst, count, "cudaMemsetAsync destination")) return nullptr;
      return [dst, value, count] { std::memset(dst, value, count); };
    };
    return Captures::get().record(stream, std::move(node));
  }
  cuda_emu::counters::memset(count);
  const CompletionPtr done =
      Engine::get().enqueue(stream, api, [dst, value, count] { std::memset(dst, value, count); });
  if (sync && side.info.kind == MemoryKind::PinnedHost) Engine::get().wait(done, "cudaMemset(pinned host)");
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** ptr, size_t size) {
  return api_call("cudaMalloc", Needs::Device, [&] {
    if (ptr == nullptr) return cudaErrorInvalidValue;
    if (const cudaError_t e = Captures::get().check_unsafe("cudaMalloc"); e != cudaSuccess) return e;
    *ptr = nullptr;
    if (size == 0) return cudaSuccess;
    return Memory::get().allocate(MemoryKind::Device, cuda_emu::current_device(), size, ptr);
  });
}

cudaError_t cudaFree(void* ptr) {
  return api_call("cudaFree", Needs::Device, [&] {
    if (const cudaError_t e = Captures::get().check_unsafe("cudaFree"); e != cudaSuccess) return e;
    if (ptr == nullptr) return cudaSuccess;
    int device = 0;
    if (Memory::get().begin_release(ptr, MemoryKind::Device, &device) != cudaSuccess) {
      return misuse("cudaFree", "not the start of a live cudaMalloc allocation");
    }
    synchronize_device(device, "cudaFree");
    Memory::get().finish_release(ptr);
    return cuda_emu::device_fault(device);
  });
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return api_call("cudaMallocHost", Needs::Device, [&] { return host_alloc("cudaMallocHost", ptr, size, 0); });
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  return api_call("cudaHostAlloc", Needs::Device, [&] { return host_alloc("cudaHostAlloc", ptr, size, flags); });
}

cudaError_t cudaFreeHost(void* ptr) {
  return api_call("cudaFreeHost", Needs::Device, [&] {
    if (const cudaError_t e = Captures::get().check_unsafe("cudaFreeHost"); e != cudaSuccess) return e;
    if (ptr == nullptr) return cudaSuccess;
    int device = 0;
    if (Memory::get().begin_release(ptr, MemoryKind::PinnedHost, &device) != cudaSuccess) {
      return misuse("cudaFreeHost", "not the start of a live pinned host allocation");
    }
    synchronize_device(device, "cudaFreeHost");
    Memory::get().finish_release(ptr);
    return cudaSuccess;
  });
}

cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t stream) {
  return api_call("cudaMallocAsync", Needs::Device, [&] {
    if (ptr == nullptr) return cudaErrorInvalidValue;
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    if (const cudaError_t e = check_stream_ordered_memory(s, "cudaMallocAsync"); e != cudaSuccess) return e;
    *ptr = nullptr;
    if (size == 0) return cudaSuccess;
    // Allocated at once (so the pointer is known to the registry); usable in stream order.
    const cudaError_t e = Memory::get().allocate(MemoryKind::Device, s->device, size, ptr);
    if (e == cudaSuccess) Engine::get().enqueue(s, "cudaMallocAsync", nullptr);
    return e;
  });
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  return api_call("cudaFreeAsync", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    if (const cudaError_t e = check_stream_ordered_memory(s, "cudaFreeAsync"); e != cudaSuccess) return e;
    if (ptr == nullptr) return cudaSuccess;
    int device = 0;
    if (Memory::get().begin_release(ptr, MemoryKind::Device, &device) != cudaSuccess) {
      return misuse("cudaFreeAsync", "not the start of a live device allocation");
    }
    Engine::get().enqueue(s, "cudaFreeAsync", [ptr] { Memory::get().finish_release(ptr); });
    return cudaSuccess;
  });
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return api_call("cudaMemcpy", Needs::Device, [&] {
    if (const cudaError_t e = check_synchronous("cudaMemcpy"); e != cudaSuccess) return e;
    if (count == 0) return cudaSuccess;
    CopyPlan plan;
    if (const cudaError_t e = plan_copy("cudaMemcpy", dst, src, count, kind, plan); e != cudaSuccess) return e;
    const int device = cuda_emu::current_device();
    const cudaError_t e = run_copy("cudaMemcpy", resolve(nullptr), dst, src, count, plan, /*sync=*/true);
    return e != cudaSuccess ? e : cuda_emu::device_fault(device);
  });
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return api_call("cudaMemcpyAsync", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    bool capturing = false;
    if (const cudaError_t e = Captures::get().issue_check(s, &capturing, "cudaMemcpyAsync"); e != cudaSuccess) return e;
    if (count == 0) return cudaSuccess;
    CopyPlan plan;
    if (const cudaError_t e = plan_copy("cudaMemcpyAsync", dst, src, count, kind, plan); e != cudaSuccess) return e;
    if (capturing) return capture_copy(s, dst, src, count, plan);
    const cudaError_t e = run_copy("cudaMemcpyAsync", s, dst, src, count, plan, /*sync=*/false);
    return e != cudaSuccess ? e : cuda_emu::device_fault(s->device);
  });
}

cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  return api_call("cudaMemset", Needs::Device, [&] {
    if (const cudaError_t e = check_synchronous("cudaMemset"); e != cudaSuccess) return e;
    return memset_on("cudaMemset", resolve(nullptr), ptr, value, count, /*sync=*/true);
  });
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  return api_call("cudaMemsetAsync", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    return memset_on("cudaMemsetAsync", s, ptr, value, count, /*sync=*/false);
  });
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes, const void* ptr) {
  return api_call("cudaPointerGetAttributes", Needs::Device, [&] {
    if (attributes == nullptr) return cudaErrorInvalidValue;
    const PointerInfo info = Memory::get().lookup(ptr);
    void* p = const_cast<void*>(ptr);
    cudaPointerAttributes a{};
    switch (info.kind) {
      case MemoryKind::Device:
        a.type = cudaMemoryTypeDevice;
        a.device = info.device;
        a.devicePointer = p;
        break;
      case MemoryKind::PinnedHost:  // mapped at the same address on the device (unified addressing)
        a.type = cudaMemoryTypeHost;
        a.device = info.device;
        a.devicePointer = p;
        a.hostPointer = p;
        break;
      case MemoryKind::Unregistered:
        a.type = cudaMemoryTypeUnregistered;
        a.device = cudaInvalidDeviceId;
        a.hostPointer = p;
        break;
    }
    *attributes = a;
    return cudaSuccess;
  });
}

}  // extern "C"
