// test_batch_prefetcher.cpp — the loader thread's hand-over (data/batch_prefetcher.hpp): every batch
// exactly once and in order, never handed out before its fill finished, refills only after
// release, errors surfacing on the step's thread. Runs in the TSan preset too: a missing
// happens-before edge between the fill's writes and the step's reads is a reported race there.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "data/batch_prefetcher.hpp"

namespace microddp::data {
namespace {

constexpr int kRows = 4096;  // large enough that a half-written slot is likely to be seen

// Slot buffers the fill writes batch numbers into, element by element, with a pause half way, so a
// batch handed out early would show mixed values.
struct Slots {
  explicit Slots(int depth) : data(static_cast<std::size_t>(depth), std::vector<std::int64_t>(kRows, -1)) {}
  std::vector<std::vector<std::int64_t>> data;
  void fill(std::int64_t batch, int slot) {
    auto& v = data[static_cast<std::size_t>(slot)];
    for (int i = 0; i < kRows; ++i) {
      if (i == kRows / 2) std::this_thread::sleep_for(std::chrono::microseconds(200));
      v[static_cast<std::size_t>(i)] = batch;
    }
  }
  bool holds(int slot, std::int64_t batch) const {
    for (std::int64_t x : data[static_cast<std::size_t>(slot)])
      if (x != batch) return false;
    return true;
  }
};

TEST(BatchPrefetcher, HandsOutEveryBatchOnceInOrderAndComplete) {
  for (int depth : {1, 2, 3}) {
    Slots slots(depth);
    std::vector<std::int64_t> filled;  // written by the loader only; read after the prefetcher is gone
    {
      BatchPrefetcher p(depth, /*first_batch=*/5, [&](std::int64_t b, int s) {
        filled.push_back(b);
        slots.fill(b, s);
      });
      for (std::int64_t b = 5; b < 25; ++b) {
        const int s = p.acquire(b);
        EXPECT_EQ(s, static_cast<int>(b % depth));
        EXPECT_TRUE(slots.holds(s, b)) << "batch " << b << " handed out before its fill finished (depth " << depth
                                       << ")";
        p.release(b);
      }
    }
    // Batches 5..24 in order, then at most `depth` more prepared ahead, none skipped or repeated.
    ASSERT_GE(filled.size(), 20u);
    ASSERT_LE(filled.size(), 20u + static_cast<std::size_t>(depth));
    for (std::size_t i = 0; i < filled.size(); ++i) EXPECT_EQ(filled[i], 5 + static_cast<std::int64_t>(i));
  }
}

TEST(BatchPrefetcher, NeverRefillsASlotBeforeItIsReleased) {
  constexpr int kDepth = 2;
  Slots slots(kDepth);
  BatchPrefetcher p(kDepth, 0, [&](std::int64_t b, int s) { slots.fill(b, s); });
  // Hold two batches (every slot) and give the loader time: it must not overwrite either.
  const int s0 = p.acquire(0);
  const int s1 = p.acquire(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(slots.holds(s0, 0));
  EXPECT_TRUE(slots.holds(s1, 1));
  p.release(0);
  const int s2 = p.acquire(2);  // refilled the released slot
  EXPECT_EQ(s2, s0);
  EXPECT_TRUE(slots.holds(s2, 2));
  EXPECT_TRUE(slots.holds(s1, 1));
  p.release(1);
  p.release(2);
}

TEST(BatchPrefetcher, RefusesOutOfOrderUse) {
  BatchPrefetcher p(2, 3, [](std::int64_t, int) {});
  EXPECT_THROW(p.acquire(4), core::Error);  // 3 comes first
  EXPECT_THROW(p.release(3), core::Error);  // not acquired
  p.acquire(3);
  p.acquire(4);
  EXPECT_THROW(p.acquire(5), core::Error);  // both slots held
  EXPECT_THROW(p.release(4), core::Error);  // 3 is the oldest
  p.release(3);
  p.release(4);
}

TEST(BatchPrefetcher, AFillErrorSurfacesAtThatBatch) {
  BatchPrefetcher p(2, 0, [](std::int64_t b, int) {
    if (b == 2) throw std::runtime_error("row 7 unreadable");
  });
  p.acquire(0);
  p.release(0);
  p.acquire(1);
  p.release(1);
  try {
    p.acquire(2);
    FAIL() << "the fill's error was not rethrown";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "row 7 unreadable");
  }
}

// exposed_ns counts only real waits: a batch filled before it is asked for costs nothing; a batch
// whose fill is held back is waited for. Gated by the test, not by timing.
TEST(BatchPrefetcher, CountsExposedWaitsOnly) {
  std::mutex m;
  std::condition_variable cv;
  bool open = true;
  std::atomic<std::int64_t> done{0};
  BatchPrefetcher p(2, 0, [&](std::int64_t b, int) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return open || b == 0; });
    done = b + 1;
  });
  while (done.load() < 2) std::this_thread::yield();  // batches 0 and 1 ready
  p.acquire(0);
  p.acquire(1);
  EXPECT_EQ(p.exposed_ns(), 0);
  {
    std::lock_guard<std::mutex> lock(m);
    open = false;  // batch 2 will wait for the gate
  }
  p.release(0);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard<std::mutex> lock(m);
    open = true;
    cv.notify_all();
  });
  p.acquire(2);
  opener.join();
  EXPECT_GT(p.exposed_ns(), 0);
  EXPECT_GT(p.background_ns(), 0);
  p.release(1);
  p.release(2);
}

TEST(BatchPrefetcher, StopsWhileTheLoaderWaitsForASlot) {
  auto p = std::make_unique<BatchPrefetcher>(1, 0, [](std::int64_t, int) {});
  p->acquire(0);
  p.reset();  // the loader is waiting for batch 0's slot: the destructor must not hang
  SUCCEED();
}

}  // namespace
}  // namespace microddp::data
