// test_memory.cpp — the emulated device's memory: pointer attributes from the allocation registry,
// copy directions checked against it (stricter than a GPU), ranges that run past an allocation,
// the device capacity (ctest runs this with CUDA_EMU_DEVICE_MEMORY_MB=64) and its non-sticky
// out-of-memory error, alignment, poisoned fresh memory, frees, and the counters of cuda_emu/counters.h.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "emu_internal.hpp"
#include "emu_test_util.hpp"

namespace cuda_emu::test {
namespace {

constexpr std::size_t kMiB = 1 << 20;

TEST(Memory, PointerAttributesComeFromTheRegistry) {
  void* dev = nullptr;
  void* pinned = nullptr;
  EMU_CHECK(cudaMalloc(&dev, 1000));
  EMU_CHECK(cudaHostAlloc(&pinned, 1000, cudaHostAllocPortable));
  std::vector<char> pageable(16);
  cudaPointerAttributes a{};
  EMU_CHECK(cudaPointerGetAttributes(&a, static_cast<char*>(dev) + 999));  // any byte inside
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  EXPECT_EQ(a.device, 0);
  EXPECT_EQ(a.hostPointer, nullptr);
  EMU_CHECK(cudaPointerGetAttributes(&a, pinned));
  EXPECT_EQ(a.type, cudaMemoryTypeHost);
  EXPECT_EQ(a.hostPointer, pinned);
  EMU_CHECK(cudaPointerGetAttributes(&a, pageable.data()));
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
  EMU_CHECK(cudaPointerGetAttributes(&a, static_cast<char*>(dev) + 1000));  // one past the end
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
  // The internal API sees the same registry.
  const PointerInfo info = lookup_pointer(static_cast<char*>(dev) + 10);
  EXPECT_EQ(info.kind, MemoryKind::Device);
  EXPECT_EQ(info.base, dev);
  EXPECT_EQ(info.bytes, 1000u);
  EXPECT_EQ(lookup_pointer(pinned).kind, MemoryKind::PinnedHost);
  EXPECT_EQ(lookup_pointer(pageable.data()).kind, MemoryKind::Unregistered);
  EMU_CHECK(cudaFree(dev));
  EMU_CHECK(cudaFreeHost(pinned));
  EMU_CHECK(cudaPointerGetAttributes(&a, dev));
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered) << "freed memory is no longer registered";
}

TEST(Memory, AllocationsAreAlignedAndPoisoned) {
  for (std::size_t bytes : {std::size_t{1}, std::size_t{3}, std::size_t{257}, std::size_t{4096}}) {
    void* p = nullptr;
    EMU_CHECK(cudaMalloc(&p, bytes));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u) << bytes;
    std::vector<unsigned char> h(bytes);
    EMU_CHECK(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost));
    for (unsigned char c : h) ASSERT_EQ(c, 0xFF) << "fresh device memory is poisoned, not zero";
    EMU_CHECK(cudaFree(p));
  }
  void* p = reinterpret_cast<void*>(1);
  EMU_CHECK(cudaMalloc(&p, 0));
  EXPECT_EQ(p, nullptr);
  EMU_CHECK(cudaFree(nullptr));
}

TEST(Memory, CopyDirectionsAreCheckedAgainstTheRegistry) {
  DeviceBuffer<char> dev(64);
  std::vector<char> host(64, 1);
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemcpy(dev.get(), host.data(), 64, cudaMemcpyDeviceToHost));
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemcpy(host.data(), dev.get(), 64, cudaMemcpyHostToDevice));
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemcpy(host.data(), host.data() + 32, 16, cudaMemcpyDeviceToDevice));
  EXPECT_EQ(cudaErrorInvalidMemcpyDirection, cudaMemcpy(host.data(), dev.get(), 64, static_cast<cudaMemcpyKind>(7)));
  EXPECT_EQ(cudaErrorInvalidMemcpyDirection, cudaGetLastError());
  EXPECT_EQ(cudaSuccess, cudaGetLastError()) << "a wrong direction is not sticky";
  // cudaMemcpyDefault infers the direction.
  EMU_CHECK(cudaMemcpy(dev.get(), host.data(), 64, cudaMemcpyDefault));
  EMU_CHECK(cudaDeviceSynchronize());
  std::vector<char> back(64, 0);
  EMU_CHECK(cudaMemcpy(back.data(), dev.get(), 64, cudaMemcpyDefault));
  EXPECT_EQ(back, host);
  // Ranges past the end of an allocation; memset of pageable memory.
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemcpy(back.data(), dev.get() + 1, 64, cudaMemcpyDeviceToHost));
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemsetAsync(dev.get(), 0, 65, nullptr));
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemset(host.data(), 0, 64));
  EXPECT_EQ(cudaSuccess, cudaMemcpy(nullptr, nullptr, 0, cudaMemcpyDefault)) << "count 0 is a no-op";
  (void)cudaGetLastError();
}

TEST(Memory, FreeChecksWhatItFrees) {
  void* dev = nullptr;
  void* pinned = nullptr;
  EMU_CHECK(cudaMalloc(&dev, 64));
  EMU_CHECK(cudaMallocHost(&pinned, 64));
  EXPECT_EQ(cudaErrorInvalidValue, cudaFree(pinned)) << "pinned memory is freed with cudaFreeHost";
  EXPECT_EQ(cudaErrorInvalidValue, cudaFreeHost(dev));
  EXPECT_EQ(cudaErrorInvalidValue, cudaFree(static_cast<char*>(dev) + 8)) << "not the start of an allocation";
  EMU_CHECK(cudaFree(dev));
  EXPECT_EQ(cudaErrorInvalidValue, cudaFree(dev)) << "double free";
  EMU_CHECK(cudaFreeHost(pinned));
  (void)cudaGetLastError();
}

TEST(Memory, StreamOrderedAllocation) {
  cudaStream_t s = nullptr;
  EMU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* p = nullptr;
  EMU_CHECK(cudaMallocAsync(&p, 4096, s));
  EXPECT_EQ(lookup_pointer(p).kind, MemoryKind::Device);
  EMU_CHECK(cudaMemsetAsync(p, 3, 4096, s));
  Gate gate;
  gate.enqueue(s);
  EMU_CHECK(cudaFreeAsync(p, s));
  EXPECT_EQ(lookup_pointer(p).kind, MemoryKind::Device) << "freed in stream order, not yet";
  EXPECT_EQ(cudaErrorInvalidValue, cudaFreeAsync(p, s)) << "a second free";
  (void)cudaGetLastError();
  gate.open();
  EMU_CHECK(cudaStreamSynchronize(s));
  EXPECT_EQ(lookup_pointer(p).kind, MemoryKind::Unregistered);
  EMU_CHECK(cudaStreamDestroy(s));
}

TEST(Memory, CapacityAndTheNonStickyOutOfMemoryError) {
  // ctest sets CUDA_EMU_DEVICE_MEMORY_MB=64 for this program.
  std::size_t free_bytes = 0, total = 0;
  EMU_CHECK(cudaMemGetInfo(&free_bytes, &total));
  ASSERT_EQ(total, 64 * kMiB);
  cudaDeviceProp prop{};
  EMU_CHECK(cudaGetDeviceProperties(&prop, 0));
  EXPECT_EQ(prop.totalGlobalMem, total);
  void* a = nullptr;
  void* b = nullptr;
  EMU_CHECK(cudaMalloc(&a, 48 * kMiB));
  EMU_CHECK(cudaMemGetInfo(&free_bytes, &total));
  EXPECT_EQ(free_bytes, total - 48 * kMiB);
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaMalloc(&b, 32 * kMiB));
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaMalloc(&b, std::size_t{1} << 60));
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaPeekAtLastError());
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaGetLastError());
  EXPECT_EQ(cudaSuccess, cudaGetLastError()) << "out of memory is not sticky";
  EMU_CHECK(cudaMalloc(&b, 16 * kMiB));  // exactly what is left
  EMU_CHECK(cudaFree(a));
  EMU_CHECK(cudaFree(b));
  void* pinned = nullptr;
  EMU_CHECK(cudaMallocHost(&pinned, 128 * kMiB)) << "pinned host memory does not count against the device";
  EMU_CHECK(cudaFreeHost(pinned));
}

TEST(Memory, CountersCountCopiesAllocationsAndHostSyncs) {
  cudaStream_t s = nullptr;
  EMU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* dev = nullptr;
  void* dev2 = nullptr;
  void* pinned = nullptr;
  std::vector<char> pageable(1000);
  const cudaEmuCounters before = counters();
  cudaEmuResetCounters();
  EMU_CHECK(cudaMalloc(&dev, 1000));
  EMU_CHECK(cudaMalloc(&dev2, 1000));
  EMU_CHECK(cudaMallocHost(&pinned, 1000));
  EMU_CHECK(cudaMemcpy(dev, pageable.data(), 100, cudaMemcpyHostToDevice));          // 1 sync (stream sync before)
  EMU_CHECK(cudaMemcpyAsync(dev, pinned, 200, cudaMemcpyHostToDevice, s));           // async
  EMU_CHECK(cudaMemcpyAsync(pinned, dev, 300, cudaMemcpyDeviceToHost, s));           // async
  EMU_CHECK(cudaMemcpyAsync(pageable.data(), dev, 400, cudaMemcpyDeviceToHost, s));  // 1 sync
  EMU_CHECK(cudaMemcpyAsync(dev2, dev, 500, cudaMemcpyDeviceToDevice, s));           // async
  EMU_CHECK(cudaMemsetAsync(dev, 0, 600, s));
  EMU_CHECK(cudaLaunchHostFunc(
      s, [](void*) {}, nullptr));
  EMU_CHECK(cudaStreamSynchronize(s));  // 1 sync
  EMU_CHECK(cudaFree(dev));             // 1 sync
  EMU_CHECK(cudaFree(dev2));            // 1 sync
  EMU_CHECK(cudaFreeHost(pinned));      // 1 sync
  const cudaEmuCounters c = counters();
  EXPECT_EQ(c.h2d_pageable_bytes, 100u);
  EXPECT_EQ(c.h2d_pinned_bytes, 200u);
  EXPECT_EQ(c.d2h_pinned_bytes, 300u);
  EXPECT_EQ(c.d2h_pageable_bytes, 400u);
  EXPECT_EQ(c.d2d_bytes, 500u);
  EXPECT_EQ(c.memset_bytes, 600u);
  EXPECT_EQ(c.host_functions, 1u);
  EXPECT_EQ(c.device_allocations, 2u);
  EXPECT_EQ(c.pinned_allocations, 1u);
  EXPECT_EQ(c.device_frees, 2u);
  EXPECT_EQ(c.pinned_frees, 1u);
  EXPECT_EQ(c.device_bytes_in_use, before.device_bytes_in_use) << "a level, not reset";
  EXPECT_EQ(c.host_syncs, 6u) << host_sync_report();
  const std::string report = host_sync_report();
  EXPECT_NE(report.find("cudaMemcpyAsync(device->pageable host): 1"), std::string::npos) << report;
  EXPECT_NE(report.find("cudaFree: 2"), std::string::npos) << report;
  EMU_CHECK(cudaStreamDestroy(s));
}

}  // namespace
}  // namespace cuda_emu::test
