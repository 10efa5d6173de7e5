// emu_test_util.hpp — shared pieces of the emulator's own tests: checked CUDA calls, an owning device
// buffer, a gate that holds a stream until the test opens it, and fault expectations.
// Contract: header-only, for GoogleTest programs linked with the emulated runtime (cuda_emu_testing).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_emu/control.h"
#include "cuda_emu/counters.h"

#define EMU_CHECK(expr) ASSERT_EQ(cudaSuccess, (expr)) << #expr

namespace cuda_emu::test {

// Device memory of `n` elements (poisoned by the emulator: all bytes 0xFF).
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (cudaMalloc(&p_, bytes()) != cudaSuccess) p_ = nullptr;
  }
  ~DeviceBuffer() { (void)cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return p_; }
  std::size_t bytes() const { return n_ * sizeof(T); }
  void upload(const std::vector<T>& host) const {
    ASSERT_EQ(cudaSuccess, cudaMemcpy(p_, host.data(), bytes(), cudaMemcpyHostToDevice));
    ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());  // a pageable upload lands asynchronously
  }
  std::vector<T> download() const {
    std::vector<T> h(n_);
    EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize());
    EXPECT_EQ(cudaSuccess, cudaMemcpy(h.data(), p_, bytes(), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

// A host function that blocks its stream until open() (or destruction): makes "this work has not
// run yet" deterministic instead of a matter of timing.
class Gate {
 public:
  ~Gate() { open(); }
  void enqueue(cudaStream_t stream) { ASSERT_EQ(cudaSuccess, cudaLaunchHostFunc(stream, &Gate::wait, this)); }
  void open() {
    const std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  static void wait(void* p) {
    auto* g = static_cast<Gate*>(p);
    std::unique_lock<std::mutex> lock(g->mutex_);
    g->cv_.wait(lock, [g] { return g->open_; });
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

inline cudaEmuCounters counters() {
  cudaEmuCounters c{};
  cudaEmuGetCounters(&c);
  return c;
}

inline std::string fault_message() {
  std::string m(cudaEmuFaultMessage(nullptr, 0) + 1, '\0');
  m.resize(cudaEmuFaultMessage(m.data(), m.size()));
  return m;
}

inline std::string host_sync_report() {
  std::string m(cudaEmuHostSyncReport(nullptr, 0) + 1, '\0');
  m.resize(cudaEmuHostSyncReport(m.data(), m.size()));
  return m;
}

// After work that must fault the device: the next synchronisation returns `error`, the fault
// message contains `needle`; then the fault is cleared for the next test.
inline void expect_fault(cudaError_t error, const std::string& needle) {
  EXPECT_EQ(error, cudaDeviceSynchronize());
  EXPECT_EQ(error, cudaGetLastError()) << "a fault is sticky";
  const std::string m = fault_message();
  EXPECT_NE(m.find(needle), std::string::npos) << "fault message: " << m;
  cudaEmuClearFaults();
  (void)cudaGetLastError();
  EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize());
}

}  // namespace cuda_emu::test
