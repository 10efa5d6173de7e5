// test_progress_engine.cpp — ProgressEngine on its own (no MPI): FIFO execution and sequence
// numbers, monotonic completion, failure propagation (the failing collective and every later one
// fail with its message, earlier ones succeed, new submissions throw), a tiny ring under many
// submissions, the inline path of synchronous calls, and draining on destruction.
// Executors here are plain lambdas; handshakes use atomics so no test depends on timing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/runtime/progress_engine.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"

namespace microddp::comm {
namespace {

CollectiveCall call_with_tag(int tag) {
  CollectiveCall c;
  c.kind = CollectiveKind::AllReduce;
  c.root = tag;  // payload the executor can see
  return c;
}

void spin_until(const std::atomic<bool>& flag) {
  while (!flag.load()) std::this_thread::yield();  // bounded by the ctest timeout
}

TEST(ProgressEngine, FifoOrderAndSequenceNumbers) {
  std::vector<std::pair<std::uint64_t, int>> seen;  // executor runs one at a time: no lock needed
  ProgressEngine engine([&](const CollectiveCall& c) { seen.emplace_back(c.seq, c.root); });
  constexpr int kCalls = 500;
  std::vector<Work> works;
  for (int i = 0; i < kCalls; ++i) works.push_back(engine.submit(call_with_tag(i), Mode::Async));
  engine.wait_all();  // orders `seen` before the reads below (mutex hand-off)
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kCalls));
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_EQ(seen[static_cast<std::size_t>(i)].first, static_cast<std::uint64_t>(i + 1));
    EXPECT_EQ(seen[static_cast<std::size_t>(i)].second, i);
    EXPECT_EQ(works[static_cast<std::size_t>(i)].seq(), static_cast<std::uint64_t>(i + 1));
  }
  EXPECT_EQ(engine.submitted(), static_cast<std::uint64_t>(kCalls));
  EXPECT_EQ(engine.completed(), static_cast<std::uint64_t>(kCalls));
}

TEST(ProgressEngine, CompletionIsMonotonic) {
  std::atomic<int> out_of_order{0};
  ProgressEngine* self = nullptr;
  ProgressEngine engine([&](const CollectiveCall& c) {
    // When seq k starts, exactly k - 1 are complete.
    if (self->completed() != c.seq - 1) ++out_of_order;
    std::this_thread::sleep_for(std::chrono::microseconds(50 + 37 * (c.seq % 5)));
  });
  self = &engine;
  constexpr int kCalls = 200;
  std::vector<Work> works;
  for (int i = 0; i < kCalls; ++i) works.push_back(engine.submit(call_with_tag(i), Mode::Async));
  std::uint64_t last = 0;
  int regressions = 0, gaps = 0;
  while (last < kCalls) {
    const std::uint64_t now = engine.completed();
    regressions += now < last;
    // Everything up to an observed completion is complete (later ones may complete meanwhile).
    for (std::uint64_t k = 1; k <= now; ++k) gaps += !works[k - 1].test();
    last = now;
  }
  EXPECT_EQ(regressions, 0);
  EXPECT_EQ(gaps, 0);
  EXPECT_EQ(out_of_order.load(), 0);
}

TEST(ProgressEngine, FailureFailsItAndLaterOnesOnly) {
  std::atomic<bool> release{false};
  std::atomic<int> executed{0};
  ProgressEngine engine([&](const CollectiveCall& c) {
    if (c.seq == 1) spin_until(release);  // hold the queue until all ten are submitted
    ++executed;
    if (c.seq == 5) throw core::Error("boom at five");
  });
  std::vector<Work> works;
  for (int i = 0; i < 10; ++i) works.push_back(engine.submit(call_with_tag(i), Mode::Async));
  release = true;
  for (int k = 0; k < 4; ++k) EXPECT_NO_THROW(works[static_cast<std::size_t>(k)].wait()) << "seq " << k + 1;
  for (int k = 4; k < 10; ++k) {
    try {
      works[static_cast<std::size_t>(k)].wait();
      ADD_FAILURE() << "seq " << k + 1 << " did not fail";
    } catch (const core::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("boom at five"), std::string::npos) << msg;
      EXPECT_NE(msg.find("#5"), std::string::npos) << msg;  // names the collective that failed
    }
    EXPECT_TRUE(works[static_cast<std::size_t>(k)].test());
  }
  EXPECT_EQ(executed.load(), 5);  // nothing after the failure was executed
  EXPECT_THROW(engine.submit(call_with_tag(99), Mode::Async), core::Error);
  EXPECT_THROW(engine.submit(call_with_tag(99), Mode::Sync), core::Error);
  EXPECT_THROW(engine.wait_all(), core::Error);
}

TEST(ProgressEngine, SyncFailureThrowsFromSubmit) {
  ProgressEngine engine([&](const CollectiveCall& c) {
    if (c.root == 7) throw core::Error("sync boom");
  });
  EXPECT_NO_THROW(engine.submit(call_with_tag(1), Mode::Sync));
  try {
    engine.submit(call_with_tag(7), Mode::Sync);
    ADD_FAILURE() << "no exception";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("sync boom"), std::string::npos) << e.what();
  }
}

TEST(ProgressEngine, TinyRingManySubmissionsNoDeadlock) {
  std::atomic<int> executed{0};
  ProgressEngine engine([&](const CollectiveCall&) { ++executed; }, /*capacity=*/2);
  constexpr int kCalls = 2000;
  for (int i = 0; i < kCalls; ++i) engine.submit(call_with_tag(i), i % 10 == 9 ? Mode::Sync : Mode::Async);
  engine.wait_all();
  EXPECT_EQ(executed.load(), kCalls);
  EXPECT_EQ(engine.completed(), static_cast<std::uint64_t>(kCalls));
}

TEST(ProgressEngine, SyncRunsInlineWhenIdle) {
  std::thread::id ran_on;
  ProgressEngine engine([&](const CollectiveCall&) { ran_on = std::this_thread::get_id(); });
  const Work w = engine.submit(call_with_tag(0), Mode::Sync);
  EXPECT_EQ(ran_on, std::this_thread::get_id());  // no hand-off to the communication thread
  EXPECT_TRUE(w.test());
  EXPECT_EQ(engine.completed(), 1u);
}

TEST(ProgressEngine, SyncWaitsBehindQueuedAsync) {
  std::atomic<bool> sync_coming{false};
  std::vector<int> order;  // executor runs one at a time
  std::thread::id async_thread;
  ProgressEngine engine([&](const CollectiveCall& c) {
    if (c.seq == 1) {
      async_thread = std::this_thread::get_id();
      spin_until(sync_coming);
      // Give the caller time to enqueue; correctness below does not depend on it.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    order.push_back(c.root);
  });
  const Work a = engine.submit(call_with_tag(1), Mode::Async);
  sync_coming = true;
  engine.submit(call_with_tag(2), Mode::Sync);
  EXPECT_TRUE(a.test());
  EXPECT_EQ(engine.completed(), 2u);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], 1);
  EXPECT_EQ(order[1], 2);
  EXPECT_NE(async_thread, std::this_thread::get_id());  // async work runs on the communication thread
}

TEST(ProgressEngine, DestructorDrainsQueue) {
  std::atomic<int> executed{0};
  {
    ProgressEngine engine([&](const CollectiveCall&) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      ++executed;
    });
    for (int i = 0; i < 100; ++i) engine.submit(call_with_tag(i), Mode::Async);
  }
  EXPECT_EQ(executed.load(), 100);
}

// Start of execution (Work::start_ns) is when the thread picked the collective up: a collective
// queued behind a blocked one starts only after that one completed, and the executor itself runs
// inside [start, completion]. The order of clock reads, not their values, is asserted.
TEST(ProgressEngine, StartOfExecutionFollowsThePreviousCompletion) {
  std::atomic<bool> release{false};
  std::vector<std::int64_t> ran_at(3, 0);  // the executor's own clock read, per seq - 1
  ProgressEngine engine([&](const CollectiveCall& c) {
    if (c.seq == 1) spin_until(release);
    ran_at[c.seq - 1] = core::now_ns();
  });
  const std::int64_t submitted_at = core::now_ns();
  std::vector<Work> works;
  for (int i = 0; i < 3; ++i) works.push_back(engine.submit(call_with_tag(i), Mode::Async));
  release = true;
  engine.wait_all();
  for (std::size_t i = 0; i < works.size(); ++i) {
    SCOPED_TRACE("seq " + std::to_string(works[i].seq()));
    const std::int64_t start = works[i].start_ns(), done = works[i].completion_ns();
    ASSERT_GT(start, 0);
    EXPECT_GE(start, submitted_at);
    EXPECT_LE(start, ran_at[i]);
    EXPECT_LE(ran_at[i], done);
    if (i > 0) {
      EXPECT_GE(start, works[i - 1].completion_ns());  // FIFO: queued until the previous one completed
    }
  }
  EXPECT_EQ(Work().start_ns(), 0);  // synchronous (default) Work: no timestamps
}

TEST(ProgressEngine, RejectsZeroCapacity) {
  EXPECT_THROW(ProgressEngine([](const CollectiveCall&) {}, 0), core::Error);
}

}  // namespace
}  // namespace microddp::comm
