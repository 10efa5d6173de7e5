// standin_runtime.cpp — TEST-ONLY stand-in for the emulated CUDA runtime (`cuda_emu_runtime`), so that
// cuda_emu_nccl and its tests build and run before the real runtime is merged. It is linked only when no
// `cuda_emu_runtime` target exists (CMakeLists.txt) and is used solely by cuda_emu_nccl's own tests.
// Delete it (and emu_internal.hpp beside it) once the real runtime is linked.
//
// What it provides, deliberately minimal:
//   * the internal API of emu_internal.hpp: every cudaStream_t is a FIFO with one worker thread (the
//     legacy default stream, nullptr, is one more, created on first use and never destroyed);
//     lookup_pointer knows cudaMalloc (Device, of the device current at allocation) and cudaMallocHost
//     (PinnedHost) allocations; kStandinDevices devices, device_uuid a hash of the device index — the
//     same in every process of a host, as a real GPU's UUID is, so two ranks on "device 0" of one host
//     are duplicates.
//   * the CUDA runtime calls the tests use: cudaSetDevice/GetDevice/GetDeviceCount, cudaMalloc/Free,
//     cudaMallocHost/FreeHost, cudaMemcpy (synchronous: waits for the calling device's streams first),
//     cudaMemcpyAsync (stream-ordered), cudaStreamCreate(+WithFlags)/Destroy/Synchronize/Query,
//     cudaDeviceSynchronize, cudaLaunchHostFunc, cudaGetErrorString/Name. No legacy-stream implicit
//     synchronisation, no events, no kernels.
#include <cuda_runtime_api.h>

#include <array>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "emu_internal.hpp"

// The stand-in's stream object: cudaStream_t is `CUstream_st*` in the CUDA headers.
struct CUstream_st {
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  bool busy = false;  // the worker is running an item
  bool stop = false;
  const int device;  // current device of the creating thread
  std::thread worker;

  explicit CUstream_st(int d) : device(d), worker([this] { run(); }) {}
  void run() {
    std::unique_lock lock(m);
    for (;;) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;  // stop requested and drained
      std::function<void()> fn = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      fn();
      lock.lock();
      busy = false;
      cv.notify_all();
    }
  }
  void push(std::function<void()> fn) {
    {
      std::lock_guard lock(m);
      queue.push_back(std::move(fn));
    }
    cv.notify_all();
  }
  void drain() {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return queue.empty() && !busy; });
  }
  bool idle() {
    std::lock_guard lock(m);
    return queue.empty() && !busy;
  }
  ~CUstream_st() {
    {
      std::lock_guard lock(m);
      stop = true;
    }
    cv.notify_all();
    worker.join();
  }
};

namespace {

constexpr int kStandinDevices = 64;  // one per rank of the largest communicator tested (64 threads in one process)

struct Allocation {
  std::size_t bytes;
  cuda_emu::MemoryKind kind;
  int device;
};

struct Registry {
  std::mutex m;
  std::map<std::uintptr_t, Allocation> allocations;  // by base address
  std::set<CUstream_st*> streams;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: streams may still run during exit
  return *r;
}
CUstream_st* legacy_stream() {
  static CUstream_st* s = new CUstream_st(0);  // never destroyed (its worker outlives static destruction)
  return s;
}
CUstream_st* resolve(cudaStream_t s) { return s == nullptr ? legacy_stream() : s; }

thread_local int t_device = 0;

// What cudaMemcpy / cudaDeviceSynchronize wait for: the legacy stream and every stream of the calling
// thread's device (as CUDA's device-wide synchronisation; other devices' streams run on).
void synchronize_device() {
  legacy_stream()->drain();
  std::set<CUstream_st*> streams;
  {
    std::lock_guard lock(registry().m);
    streams = registry().streams;
  }
  for (CUstream_st* s : streams) {
    if (s->device == t_device) s->drain();
  }
}

cudaError_t allocate(void** p, std::size_t bytes, cuda_emu::MemoryKind kind) {
  if (p == nullptr) return cudaErrorInvalidValue;
  *p = std::malloc(bytes == 0 ? 1 : bytes);
  if (*p == nullptr) return cudaErrorMemoryAllocation;
  std::lock_guard lock(registry().m);
  registry().allocations[reinterpret_cast<std::uintptr_t>(*p)] = Allocation{bytes, kind, t_device};
  return cudaSuccess;
}
cudaError_t release(void* p) {
  if (p == nullptr) return cudaSuccess;
  {
    std::lock_guard lock(registry().m);
    if (registry().allocations.erase(reinterpret_cast<std::uintptr_t>(p)) == 0) return cudaErrorInvalidValue;
  }
  std::free(p);
  return cudaSuccess;
}

}  // namespace

namespace cuda_emu {

void enqueue(cudaStream_t stream, const char* /*what*/, std::function<void()> fn) { resolve(stream)->push(std::move(fn)); }

PointerInfo lookup_pointer(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard lock(registry().m);
  auto& allocations = registry().allocations;
  auto it = allocations.upper_bound(a);
  if (it != allocations.begin()) {
    --it;
    if (a < it->first + std::max<std::size_t>(it->second.bytes, 1)) {
      return {it->second.kind, it->second.device, reinterpret_cast<const void*>(it->first), it->second.bytes};
    }
  }
  return {MemoryKind::Unregistered, -1, nullptr, 0};
}

int current_device() { return t_device; }

std::array<unsigned char, 16> device_uuid(int device) {
  std::array<unsigned char, 16> u{};
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a 64 offset basis / prime
  for (std::size_t i = 0; i < u.size(); ++i) {
    h = (h ^ static_cast<std::uint64_t>(device + 1) ^ (i << 8)) * 1099511628211ULL;
    u[i] = static_cast<unsigned char>(h >> 56);
  }
  return u;
}

}  // namespace cuda_emu

extern "C" {

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= kStandinDevices) return cudaErrorInvalidDevice;
  t_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return cudaErrorInvalidValue;
  *device = t_device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return cudaErrorInvalidValue;
  *count = kStandinDevices;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t bytes) { return allocate(p, bytes, cuda_emu::MemoryKind::Device); }
cudaError_t cudaFree(void* p) { return release(p); }
cudaError_t cudaMallocHost(void** p, size_t bytes) { return allocate(p, bytes, cuda_emu::MemoryKind::PinnedHost); }
cudaError_t cudaFreeHost(void* p) { return release(p); }
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind /*kind*/) {
  synchronize_device();
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind /*kind*/, cudaStream_t s) {
  resolve(s)->push([=] {
    if (bytes > 0) std::memmove(dst, src, bytes);
  });
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) {
  if (s == nullptr) return cudaErrorInvalidValue;
  *s = new CUstream_st(t_device);
  std::lock_guard lock(registry().m);
  registry().streams.insert(*s);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int /*flags*/) { return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  {
    std::lock_guard lock(registry().m);
    if (registry().streams.erase(s) == 0) return cudaErrorInvalidResourceHandle;
  }
  delete s;  // runs what is queued, then joins the worker
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  resolve(s)->drain();
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s) { return resolve(s)->idle() ? cudaSuccess : cudaErrorNotReady; }
cudaError_t cudaDeviceSynchronize(void) {
  synchronize_device();
  return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* user) {
  resolve(s)->push([fn, user] { fn(user); });
  return cudaSuccess;
}
const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "stand-in runtime error"; }
const char* cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaError (stand-in)"; }

}  // extern "C"
