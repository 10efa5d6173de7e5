// progress_engine.hpp — runs a communicator's collectives in issue order on one background thread.
//
// Why a thread: MPI (and our hand-rolled algorithms over MPI point-to-point) only progress while
// some thread is inside the library. A dedicated communication thread that owns all of a
// communicator's MPI traffic makes an async all-reduce advance while the main thread computes
// backward (docs/design.md: "async progress is real"), the way Horovod's background thread does.
//
// Contract:
//   * Collectives execute strictly in submission order (FIFO), one at a time, so every rank
//     executes the same sequence. Each submission gets the next sequence number (1, 2, ...).
//   * A synchronous submission runs inline on the caller's thread when nothing is queued or
//     running (no thread hand-off on the latency-critical path); otherwise it queues and waits.
//   * Completion is monotonic: seq k complete <=> all seq <= k complete. test() never blocks.
//   * Once a collective fails, it and every later one complete with that error (the ranks can no
//     longer be assumed to agree on the sequence); wait() throws it, new submissions throw.
//   * The queue is a fixed ring sized at construction: submitting allocates nothing. A full ring
//     blocks the submitter until a slot frees.
//   * The idle thread sleeps on a condition variable (no spinning next to BLAS threads).
//   * MPI is initialised with MPI_THREAD_SERIALIZED, a promise about the whole process: at any
//     moment at most one of its threads is inside MPI, whatever the communicator. Each engine keeps
//     that for the calls it makes; so use one communicator at a time per process.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/runtime/collective_watchdog.hpp"
#include "comm/types.hpp"
#include "comm/work.hpp"

namespace microddp::comm {

class ProgressEngine final : public WorkSource {
 public:
  // executor runs one collective to completion (blocking); it may throw core::Error.
  using Executor = std::function<void(const CollectiveCall&)>;

  explicit ProgressEngine(Executor executor, std::size_t capacity = 4096);
  ~ProgressEngine() override;  // waits for queued work, then joins the thread
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;

  Work submit(CollectiveCall call, Mode mode);
  bool is_complete(std::uint64_t seq) override;
  void wait_for(std::uint64_t seq) override;
  void wait_all();  // waits for everything submitted so far (throws on failure)
  // core::now_ns() when `seq` completed, taken on the thread that ran it just before the completion
  // was published; 0 if `seq` has not completed or is older than the last `capacity` completions.
  std::int64_t completion_ns(std::uint64_t seq) override;
  // core::now_ns() when `seq` left the queue and began executing (the thread that ran it, right
  // before the executor); same availability as completion_ns().
  std::int64_t start_ns(std::uint64_t seq) override;

  // Watch every collective executed from now on (nullptr: stop watching). Not owned.
  void set_watchdog(CollectiveWatchdog* watchdog) { watchdog_.store(watchdog); }

  std::uint64_t submitted() const { return next_seq_ - 1; }
  std::uint64_t completed() const { return completed_seq_.load(std::memory_order_acquire); }

 private:
  void thread_main();
  void run_one(const CollectiveCall& call);  // executes and records completion/failure

  Executor executor_;
  std::atomic<CollectiveWatchdog*> watchdog_{nullptr};
  std::vector<CollectiveCall> ring_;
  std::size_t head_ = 0;  // next slot to execute
  std::size_t size_ = 0;  // queued, not yet started
  std::uint64_t next_seq_ = 1;
  bool busy_ = false;  // a collective is executing (thread or inline)
  bool stop_ = false;
  std::atomic<std::uint64_t> completed_seq_{0};
  std::uint64_t failed_seq_ = 0;  // 0: no failure
  // Start and completion timestamps, slot seq % capacity, tagged with their seq (guarded by mutex_).
  std::vector<std::uint64_t> done_seq_;
  std::vector<std::int64_t> start_ns_;
  std::vector<std::int64_t> done_ns_;
  std::string error_;
  std::mutex mutex_;
  std::condition_variable work_cv_;  // the thread waits for work here
  std::condition_variable done_cv_;  // waiters wait for completions here
  std::thread thread_;
};

}  // namespace microddp::comm
