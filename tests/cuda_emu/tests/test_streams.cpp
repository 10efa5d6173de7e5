// test_streams.cpp — the emulated device's streams behave as a GPU's: asynchronous and in order,
// the legacy default stream's implicit ordering (and cudaStreamNonBlocking's exemption), events and
// cudaStreamWaitEvent across streams, host functions, and the documented host-synchronisation
// rules of pageable vs pinned copies. Each test shows the failure a missing synchronisation
// causes (stale data), so the emulator is shown to catch it. "Not run yet" is made deterministic
// with a Gate (a host function that holds its stream) wherever possible; where a test relies on
// CUDA_EMU_STREAM_DELAY_US, the margin is tens of milliseconds against microseconds.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "emu_test_util.hpp"

namespace cuda_emu::test {
namespace {

constexpr unsigned char kPoisonByte = 0xFF;  // what the emulator fills new allocations with

class Streams : public ::testing::Test {
 protected:
  void SetUp() override {
    cudaEmuSetStreamDelayUs(0);
    EMU_CHECK(cudaStreamCreateWithFlags(&nonblocking_, cudaStreamNonBlocking));
    EMU_CHECK(cudaStreamCreateWithFlags(&blocking_, cudaStreamDefault));
    EMU_CHECK(cudaMallocHost(&pinned_, 4096));
  }
  void TearDown() override {
    cudaEmuSetStreamDelayUs(0);
    EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize());
    EXPECT_EQ(cudaSuccess, cudaStreamDestroy(nonblocking_));
    EXPECT_EQ(cudaSuccess, cudaStreamDestroy(blocking_));
    EXPECT_EQ(cudaSuccess, cudaFreeHost(pinned_));
  }
  cudaStream_t nonblocking_ = nullptr;
  cudaStream_t blocking_ = nullptr;
  unsigned char* pinned_ = nullptr;
};

TEST_F(Streams, MissingSynchronisationReadsStaleDataUnderADelay) {
  DeviceBuffer<unsigned char> buf(256);
  // Four operations queued on a non-blocking stream start 1, 2, 3, 4 delays after the call; the
  // read on the legacy stream (which does not wait for a non-blocking stream) starts after one.
  cudaEmuSetStreamDelayUs(50'000);
  for (int v = 1; v <= 4; ++v) EMU_CHECK(cudaMemsetAsync(buf.get(), v, 256, nonblocking_));
  std::vector<unsigned char> host(256, 0);
  EMU_CHECK(cudaMemcpy(host.data(), buf.get(), 256, cudaMemcpyDeviceToHost));  // no wait for the stream: a bug
  EXPECT_NE(host[0], 4) << "the read did not wait: it must not see the last memset (150 ms of margin)";
  EMU_CHECK(cudaStreamSynchronize(nonblocking_));  // the fix
  EMU_CHECK(cudaMemcpy(host.data(), buf.get(), 256, cudaMemcpyDeviceToHost));
  EXPECT_EQ(host[0], 4);
}

TEST_F(Streams, WorkRunsAsynchronouslyAndInOrder) {
  Gate gate;
  gate.enqueue(nonblocking_);
  std::vector<int> seen;
  std::mutex m;
  struct Step {
    std::vector<int>* seen;
    std::mutex* m;
    int value;
  };
  std::vector<Step> steps;
  steps.reserve(50);
  for (int i = 0; i < 50; ++i) steps.push_back(Step{&seen, &m, i});
  for (Step& s : steps) {
    EMU_CHECK(cudaLaunchHostFunc(
        nonblocking_,
        [](void* p) {
          auto* step = static_cast<Step*>(p);
          const std::lock_guard<std::mutex> lock(*step->m);
          step->seen->push_back(step->value);
        },
        &s));
  }
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(nonblocking_)) << "queued work must not run on the caller's thread";
  {
    const std::lock_guard<std::mutex> lock(m);
    EXPECT_TRUE(seen.empty());
  }
  gate.open();
  EMU_CHECK(cudaStreamSynchronize(nonblocking_));
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(nonblocking_));
  ASSERT_EQ(seen.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], i) << "stream order";
}

TEST_F(Streams, BlockingStreamWaitsForLegacyStreamNonBlockingDoesNot) {
  DeviceBuffer<unsigned char> buf(64);
  EMU_CHECK(cudaMemset(buf.get(), 1, 64));
  EMU_CHECK(cudaDeviceSynchronize());
  Gate gate;
  gate.enqueue(nullptr);                                  // the legacy stream is held...
  EMU_CHECK(cudaMemsetAsync(buf.get(), 2, 64, nullptr));  // ...before this memset
  // A non-blocking stream is not ordered after the legacy stream: it reads the old value at once.
  EMU_CHECK(cudaMemcpyAsync(pinned_, buf.get(), 64, cudaMemcpyDeviceToHost, nonblocking_));
  EMU_CHECK(cudaStreamSynchronize(nonblocking_));
  EXPECT_EQ(pinned_[0], 1);
  // A blocking stream waits for the legacy stream's earlier work.
  EMU_CHECK(cudaMemcpyAsync(pinned_ + 64, buf.get(), 64, cudaMemcpyDeviceToHost, blocking_));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(blocking_));
  gate.open();
  EMU_CHECK(cudaStreamSynchronize(blocking_));
  EXPECT_EQ(pinned_[64], 2);
}

TEST_F(Streams, LegacyStreamWaitsForBlockingStreamsNotForNonBlocking) {
  DeviceBuffer<unsigned char> a(64), b(64);
  Gate held_blocking, held_nonblocking;
  held_blocking.enqueue(blocking_);
  EMU_CHECK(cudaMemsetAsync(a.get(), 3, 64, blocking_));
  held_nonblocking.enqueue(nonblocking_);
  EMU_CHECK(cudaMemsetAsync(b.get(), 4, 64, nonblocking_));
  // Legacy-stream work waits for the held blocking stream, not for the held non-blocking one.
  EMU_CHECK(cudaMemcpyAsync(pinned_, b.get(), 64, cudaMemcpyDeviceToHost, nullptr));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(nullptr));
  held_blocking.open();
  EMU_CHECK(cudaStreamSynchronize(nullptr));
  EXPECT_EQ(pinned_[0], kPoisonByte) << "the non-blocking stream's memset is still held";
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(nonblocking_));
  held_nonblocking.open();
  EMU_CHECK(cudaDeviceSynchronize());  // waits for every stream of the device
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(nonblocking_));
}

TEST_F(Streams, StreamWaitEventOrdersTwoStreams) {
  cudaStream_t other = nullptr;
  EMU_CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaEvent_t ready = nullptr;
  EMU_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  DeviceBuffer<unsigned char> buf(64);
  for (const bool wait : {false, true}) {
    SCOPED_TRACE(wait ? "with cudaStreamWaitEvent" : "without");
    EMU_CHECK(cudaMemset(buf.get(), 0, 64));
    EMU_CHECK(cudaDeviceSynchronize());
    Gate gate;
    gate.enqueue(nonblocking_);
    EMU_CHECK(cudaMemsetAsync(buf.get(), 7, 64, nonblocking_));
    EMU_CHECK(cudaEventRecord(ready, nonblocking_));
    EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(ready));
    if (wait) {
      EMU_CHECK(cudaStreamWaitEvent(other, ready, 0));
    }
    EMU_CHECK(cudaMemcpyAsync(pinned_, buf.get(), 64, cudaMemcpyDeviceToHost, other));
    if (wait) {
      EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(other)) << "the copy waits for the event";
      gate.open();
      EMU_CHECK(cudaStreamSynchronize(other));
      EXPECT_EQ(pinned_[0], 7);
    } else {
      EMU_CHECK(cudaStreamSynchronize(other));  // does not wait for the held stream
      EXPECT_EQ(pinned_[0], 0) << "without the wait the copy reads the old bytes";
      gate.open();
    }
    EMU_CHECK(cudaEventSynchronize(ready));
    EXPECT_EQ(cudaSuccess, cudaEventQuery(ready));
  }
  EMU_CHECK(cudaEventDestroy(ready));
  EMU_CHECK(cudaStreamDestroy(other));
}

TEST_F(Streams, EventSemantics) {
  cudaEvent_t never = nullptr, timed_a = nullptr, timed_b = nullptr, untimed = nullptr;
  EMU_CHECK(cudaEventCreate(&never));
  EMU_CHECK(cudaEventCreate(&timed_a));
  EMU_CHECK(cudaEventCreate(&timed_b));
  EMU_CHECK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
  // Never recorded: complete; waiting on it returns at once; no elapsed time.
  EXPECT_EQ(cudaSuccess, cudaEventQuery(never));
  EXPECT_EQ(cudaSuccess, cudaEventSynchronize(never));
  EMU_CHECK(cudaStreamWaitEvent(nonblocking_, never, 0));
  EMU_CHECK(cudaStreamSynchronize(nonblocking_));
  float ms = -1.0f;
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, never, timed_a));
  (void)cudaGetLastError();
  // Elapsed time covers the work between the records (a 20 ms delay per operation here).
  cudaEmuSetStreamDelayUs(20'000);
  EMU_CHECK(cudaEventRecord(timed_a, nonblocking_));
  EMU_CHECK(cudaLaunchHostFunc(
      nonblocking_, [](void*) {}, nullptr));
  EMU_CHECK(cudaEventRecord(timed_b, nonblocking_));
  EXPECT_EQ(cudaErrorNotReady, cudaEventElapsedTime(&ms, timed_a, timed_b));
  (void)cudaGetLastError();
  EMU_CHECK(cudaEventSynchronize(timed_b));
  EMU_CHECK(cudaEventElapsedTime(&ms, timed_a, timed_b));
  EXPECT_GE(ms, 39.0f) << "two delayed operations after the first record";
  cudaEmuSetStreamDelayUs(0);
  EMU_CHECK(cudaEventRecord(untimed, nonblocking_));
  EMU_CHECK(cudaEventSynchronize(untimed));
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, timed_a, untimed));
  (void)cudaGetLastError();
  // Recording again moves the event to the new point in the stream.
  Gate gate;
  gate.enqueue(nonblocking_);
  EMU_CHECK(cudaEventRecord(timed_a, nonblocking_));
  EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(timed_a));
  gate.open();
  EMU_CHECK(cudaEventSynchronize(timed_a));
  EXPECT_EQ(cudaSuccess, cudaEventQuery(timed_a));
  for (cudaEvent_t e : {never, timed_a, timed_b, untimed}) EMU_CHECK(cudaEventDestroy(e));
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaEventQuery(never)) << "a destroyed event";
  (void)cudaGetLastError();
}

TEST_F(Streams, HostFunctionsRunOnTheWorkerAndMayNotCallCuda) {
  struct Probe {
    std::thread::id thread;
    cudaError_t call = cudaSuccess;
  } probe;
  EMU_CHECK(cudaLaunchHostFunc(
      nonblocking_,
      [](void* p) {
        auto* pr = static_cast<Probe*>(p);
        pr->thread = std::this_thread::get_id();
        int n = 0;
        pr->call = cudaGetDeviceCount(&n);  // CUDA forbids CUDA calls in a host function
      },
      &probe));
  EMU_CHECK(cudaStreamSynchronize(nonblocking_));
  EXPECT_NE(probe.thread, std::this_thread::get_id());
  EXPECT_EQ(probe.call, cudaErrorNotPermitted);
}

TEST_F(Streams, PageableAndPinnedCopySemantics) {
  DeviceBuffer<unsigned char> buf(64);
  std::vector<unsigned char> pageable(64, 5);
  // Pageable host -> device (async): the bytes are taken at the call; changing them afterwards does
  // not change what lands.
  {
    Gate gate;
    gate.enqueue(nonblocking_);
    EMU_CHECK(cudaMemcpyAsync(buf.get(), pageable.data(), 64, cudaMemcpyHostToDevice, nonblocking_));
    pageable.assign(64, 6);
    gate.open();
    EMU_CHECK(cudaMemcpyAsync(pinned_, buf.get(), 64, cudaMemcpyDeviceToHost, nonblocking_));
    EMU_CHECK(cudaStreamSynchronize(nonblocking_));
    EXPECT_EQ(pinned_[0], 5) << "pageable source staged at the call";
  }
  // Pinned host -> device (async): fully asynchronous, the bytes are read when the copy runs.
  {
    Gate gate;
    gate.enqueue(nonblocking_);
    std::memset(pinned_ + 128, 8, 64);
    EMU_CHECK(cudaMemcpyAsync(buf.get(), pinned_ + 128, 64, cudaMemcpyHostToDevice, nonblocking_));
    std::memset(pinned_ + 128, 9, 64);  // a race in real code: the copy has not run yet
    gate.open();
    EMU_CHECK(cudaMemcpyAsync(pinned_, buf.get(), 64, cudaMemcpyDeviceToHost, nonblocking_));
    EMU_CHECK(cudaStreamSynchronize(nonblocking_));
    EXPECT_EQ(pinned_[0], 9) << "pinned source read when the copy ran";
  }
  // Device -> pinned (async) returns before the copy; device -> pageable returns when it is done.
  {
    Gate gate;
    gate.enqueue(nonblocking_);
    pinned_[0] = 0;
    EMU_CHECK(cudaMemcpyAsync(pinned_, buf.get(), 64, cudaMemcpyDeviceToHost, nonblocking_));
    EXPECT_EQ(pinned_[0], 0);
    EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(nonblocking_));
    std::thread opener([&gate] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gate.open();
    });
    cudaEmuResetCounters();
    EMU_CHECK(cudaMemcpyAsync(pageable.data(), buf.get(), 64, cudaMemcpyDeviceToHost, nonblocking_));
    EXPECT_EQ(pageable[0], 9) << "device -> pageable host: done when the call returns";
    EXPECT_EQ(counters().host_syncs, 1u) << host_sync_report();
    opener.join();
  }
  // cudaMemcpy from pageable memory returns before the bytes land (a stream sync happens before,
  // not after): a 100 ms delay keeps the copy queued well past the return.
  {
    cudaEmuSetStreamDelayUs(100'000);
    pageable.assign(64, 10);
    EMU_CHECK(cudaMemcpy(buf.get(), pageable.data(), 64, cudaMemcpyHostToDevice));
    EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(nullptr));
    cudaEmuSetStreamDelayUs(0);
    EMU_CHECK(cudaMemcpy(pinned_, buf.get(), 64, cudaMemcpyDeviceToHost));  // legacy stream: in order
    EXPECT_EQ(pinned_[0], 10);
  }
}

TEST_F(Streams, DestroyedStreamFinishesItsWorkAndItsHandleIsInvalid) {
  cudaStream_t s = nullptr;
  EMU_CHECK(cudaStreamCreate(&s));
  DeviceBuffer<unsigned char> buf(16);
  Gate gate;
  gate.enqueue(s);
  EMU_CHECK(cudaMemsetAsync(buf.get(), 42, 16, s));
  EMU_CHECK(cudaStreamDestroy(s));  // returns at once, the work still runs
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaStreamSynchronize(s));
  (void)cudaGetLastError();
  gate.open();
  EMU_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(buf.download()[0], 42);
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaStreamDestroy(s));
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaGetLastError()) << "the last error is the last failure";
  EXPECT_EQ(cudaSuccess, cudaGetLastError()) << "and it is cleared once read";
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaMemsetAsync(buf.get(), 0, 16, cudaStreamPerThread))
      << "the per-thread default stream is not emulated";
  (void)cudaGetLastError();
}

TEST_F(Streams, StreamPriorityRangeAndCreationChecks) {
  int least = 1, greatest = 1;
  EMU_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  EXPECT_EQ(least, 0);
  EXPECT_LT(greatest, least);
  cudaStream_t s = nullptr;
  EMU_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
  EMU_CHECK(cudaStreamDestroy(s));
  EXPECT_EQ(cudaErrorInvalidValue, cudaStreamCreateWithFlags(&s, 0x8));
  EXPECT_EQ(cudaErrorInvalidValue, cudaStreamCreateWithFlags(nullptr, 0));
  (void)cudaGetLastError();
}

}  // namespace
}  // namespace cuda_emu::test
