// test_communicator.cpp — the Communicator as a composition (comm/communicator.hpp) of a backend and a
// dispatcher, with fake backends and no MPI:
//   * teardown: destroying a communicator with collectives still queued runs them all, and stops the
//     dispatcher, before the backend's destructor runs — without the backend doing anything for it;
//   * a host backend's async collectives run on the communication thread, a stream backend's are
//     launched on the caller's thread; stream ordering and the timeout reach only stream backends;
//   * host buffers reach a host backend with Mean as Sum and are scaled afterwards, a stream backend
//     gets Mean as issued; sequence numbers run 1, 2, ...; a bad call never reaches the backend;
//   * the extra-collective fault point (comm_fault_point) acts on its rank only.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.hpp"
#include "core/error.hpp"

namespace microddp::comm {
namespace {

using core::TensorView;

// What the backends saw, in order; shared with the test and outliving the backend.
struct Journal {
  std::mutex m;
  std::vector<std::string> events;  // "run <kind> <seq>", "wait_launched", "destroyed", ...
  std::vector<ReduceOp> ops;
  std::vector<std::thread::id> threads;
  void add(std::string e) {
    std::lock_guard<std::mutex> lock(m);
    events.push_back(std::move(e));
  }
  std::vector<std::string> snapshot() {
    std::lock_guard<std::mutex> lock(m);
    return events;
  }
};

std::string run_event(const CollectiveCall& c) {
  return "run " + std::string(collective_name(c.kind)) + " " + std::to_string(c.seq);
}

// A host backend of `size` ranks that is alone: an all-reduce's result is its input times `size`
// (as if every rank held the same data), which makes Mean checkable.
class FakeHostBackend final : public HostBackend {
 public:
  FakeHostBackend(Journal& j, int size, std::chrono::microseconds delay) : HostBackend(0, size), j_(j), delay_(delay) {}
  ~FakeHostBackend() override { j_.add("destroyed"); }
  std::string_view name() const override { return "fake-host"; }

 protected:
  void execute(const CollectiveCall& call) override {
    std::this_thread::sleep_for(delay_);  // slow enough that collectives queue up behind each other
    if (call.kind == CollectiveKind::AllReduce && call.recv.count > 0) {
      const float* in = static_cast<const float*>(call.send.data);
      float* out = static_cast<float*>(call.recv.data);
      for (std::int64_t i = 0; i < call.recv.count; ++i) out[i] = in[i] * static_cast<float>(size());
    }
    {
      std::lock_guard<std::mutex> lock(j_.m);
      j_.ops.push_back(call.op);
      j_.threads.push_back(std::this_thread::get_id());
    }
    j_.add(run_event(call));
  }

 private:
  Journal& j_;
  std::chrono::microseconds delay_;
};

// A stream backend whose "device" completes a collective when it is waited for.
class FakeStreamBackend final : public StreamBackend, private WorkSource {
 public:
  explicit FakeStreamBackend(Journal& j) : StreamBackend(0, 1), j_(j) {}
  ~FakeStreamBackend() override { j_.add("destroyed"); }
  std::string_view name() const override { return "fake-stream"; }

  Work launch(const CollectiveCall& call, Mode mode) override {
    {
      std::lock_guard<std::mutex> lock(j_.m);
      j_.ops.push_back(call.op);
      j_.threads.push_back(std::this_thread::get_id());
    }
    j_.add(run_event(call));
    launched_ = call.seq;
    if (mode == Mode::Sync) {
      completed_ = call.seq;
      return Work();
    }
    return Work(this, call.seq);
  }
  void wait_launched() override {
    j_.add("wait_launched");
    completed_ = launched_;
  }
  void set_timeout(double seconds) override { j_.add("timeout " + std::to_string(static_cast<int>(seconds))); }
  void set_compute_stream(core::DeviceStream stream) override { j_.add(stream.is_null() ? "stream null" : "stream set"); }
  void order_compute_after(const Work& work) override { j_.add("order after " + std::to_string(work.seq())); }
  void wait_for_stream(core::DeviceStream stream) override { j_.add(stream.is_null() ? "wait stream null" : "wait stream set"); }
  std::string capture_obstacle() const override { return "fake obstacle"; }

 private:
  bool is_complete(std::uint64_t seq) override { return seq <= completed_; }
  void wait_for(std::uint64_t seq) override { completed_ = std::max(completed_, seq); }

  Journal& j_;
  std::uint64_t launched_ = 0, completed_ = 0;
};

TEST(Communicator, DestructionRunsQueuedWorkBeforeTheHostBackendGoes) {
  Journal j;
  constexpr int kQueued = 20;
  {
    Communicator c(std::make_unique<FakeHostBackend>(j, 1, std::chrono::microseconds(2000)));
    for (int i = 0; i < kQueued; ++i) c.barrier(Mode::Async);
    // No wait: most of them are still queued when the communicator goes out of scope.
  }
  const auto events = j.snapshot();
  ASSERT_EQ(events.size(), static_cast<std::size_t>(kQueued + 1));
  for (int i = 0; i < kQueued; ++i)
    EXPECT_EQ(events[static_cast<std::size_t>(i)], "run barrier " + std::to_string(i + 1));
  EXPECT_EQ(events.back(), "destroyed");  // the backend went last
}

TEST(Communicator, DestructionWaitsForLaunchedWorkBeforeTheStreamBackendGoes) {
  Journal j;
  {
    Communicator c(std::make_unique<FakeStreamBackend>(j));
    c.barrier(Mode::Async);
    c.barrier(Mode::Async);
  }
  const std::vector<std::string> want = {"run barrier 1", "run barrier 2", "wait_launched", "destroyed"};
  EXPECT_EQ(j.snapshot(), want);
}

TEST(Communicator, HostBackendRunsAsyncWorkOnTheCommunicationThread) {
  Journal j;
  Communicator c(std::make_unique<FakeHostBackend>(j, 1, std::chrono::microseconds(0)));
  EXPECT_FALSE(c.completes_in_stream_order());
  EXPECT_THROW(c.order_compute_after(Work()), core::Error);
  c.set_compute_stream(core::DeviceStream());  // ignored by host backends
  c.wait_for_stream(core::DeviceStream());    // nothing of theirs on a stream: returns at once
  EXPECT_EQ(c.capture_obstacle(), "");
  Work w = c.barrier(Mode::Async);
  w.wait();
  EXPECT_TRUE(w.test());
  ASSERT_EQ(j.threads.size(), 1u);
  EXPECT_NE(j.threads[0], std::this_thread::get_id());
  EXPECT_EQ(c.collectives_issued(), 1u);
  EXPECT_EQ(c.name(), "fake-host");
  EXPECT_NE(c.backend_as<FakeHostBackend>(), nullptr);
  EXPECT_EQ(c.backend_as<FakeStreamBackend>(), nullptr);
}

TEST(Communicator, StreamBackendLaunchesOnTheCallersThreadAndOwnsStreamOrder) {
  Journal j;
  Communicator c(std::make_unique<FakeStreamBackend>(j));
  EXPECT_TRUE(c.completes_in_stream_order());
  int stream_stand_in = 0;
  c.set_compute_stream(core::DeviceStream(&stream_stand_in));
  Work w = c.barrier(Mode::Async);
  c.order_compute_after(w);
  c.wait_for_stream(core::DeviceStream(&stream_stand_in));  // the backend watches its collectives while the host waits
  EXPECT_EQ(c.capture_obstacle(), "fake obstacle");
  c.set_comm_timeout(7);  // waits for launched work first, then hands the limit to the backend
  ASSERT_EQ(j.threads.size(), 1u);
  EXPECT_EQ(j.threads[0], std::this_thread::get_id());
  const std::vector<std::string> want = {"stream set",      "run barrier 1", "order after 1",
                                         "wait stream set", "wait_launched", "timeout 7"};
  EXPECT_EQ(j.snapshot(), want);
  EXPECT_NE(c.backend_as<FakeStreamBackend>(), nullptr);
}

TEST(Communicator, MeanOnHostBuffersIsSumThenScaled) {
  Journal j;
  Communicator c(std::make_unique<FakeHostBackend>(j, 4, std::chrono::microseconds(0)));
  std::vector<float> x = {1, 2, 3, 4}, y(4);
  c.all_reduce(TensorView::of(x.data(), 4), TensorView::of(y.data(), 4), ReduceOp::Mean);
  EXPECT_EQ(y, x);  // 4·x from the backend, times fl(1/4)
  ASSERT_EQ(j.ops.size(), 1u);
  EXPECT_EQ(j.ops[0], ReduceOp::Sum);

  Journal js;
  Communicator s(std::make_unique<FakeStreamBackend>(js));
  s.all_reduce(TensorView::of(x.data(), 4), ReduceOp::Mean);
  ASSERT_EQ(js.ops.size(), 1u);
  EXPECT_EQ(js.ops[0], ReduceOp::Mean);  // stream backends scale on the device themselves
}

TEST(Communicator, InvalidCallsNeverReachTheBackend) {
  for (int kind = 0; kind < 2; ++kind) {
    Journal j;
    auto c = kind == 0
                 ? std::make_unique<Communicator>(std::make_unique<FakeHostBackend>(j, 1, std::chrono::microseconds(0)))
                 : std::make_unique<Communicator>(std::make_unique<FakeStreamBackend>(j));
    std::vector<float> a(8), b(8);
    EXPECT_THROW(c->all_reduce(TensorView::of(a.data(), 4), TensorView::of(b.data(), 5), ReduceOp::Sum), core::Error);
    EXPECT_THROW(c->broadcast(TensorView::of(a.data(), 4), 1), core::Error);  // root outside one rank
    EXPECT_EQ(c->collectives_issued(), 0u);
    c->barrier();
    c->barrier();
    EXPECT_EQ(c->collectives_issued(), 2u);
    const std::vector<std::string> want = {"run barrier 1", "run barrier 2"};
    EXPECT_EQ(j.snapshot(), want);
  }
}

TEST(Communicator, ExtraCollectiveFaultActsOnItsRankOnly) {
  core::FaultPlan f;
  f.arm({std::string(comm_fault_point::kExtraCollective), 0, 2, ""});
  Journal j;
  {
    Communicator c(std::make_unique<FakeHostBackend>(j, 1, std::chrono::microseconds(0)), f);
    c.barrier();
    c.barrier();
    EXPECT_EQ(c.collectives_issued(), 3u);
  }
  const std::vector<std::string> want = {"run barrier 1", "run all_reduce 2", "run barrier 3", "destroyed"};
  EXPECT_EQ(j.snapshot(), want);

  core::FaultPlan other_rank;  // another rank's fault: nothing happens here
  other_rank.arm({std::string(comm_fault_point::kExtraCollective), 1, 2, ""});
  f = other_rank;
  Journal other;
  Communicator c(std::make_unique<FakeHostBackend>(other, 1, std::chrono::microseconds(0)), f);
  c.barrier();
  c.barrier();
  EXPECT_EQ(c.collectives_issued(), 2u);
}

}  // namespace
}  // namespace microddp::comm
