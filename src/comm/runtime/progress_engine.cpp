// progress_engine.cpp — FIFO execution of collectives on one communication thread.
#include "comm/runtime/progress_engine.hpp"

#include "core/error.hpp"
#include "core/timer.hpp"

namespace microddp::comm {

ProgressEngine::ProgressEngine(Executor executor, std::size_t capacity)
    : executor_(std::move(executor)),
      ring_(capacity),
      done_seq_(capacity, 0),
      start_ns_(capacity, 0),
      done_ns_(capacity, 0) {
  MDDP_CHECK(capacity > 0, "progress engine needs a queue capacity > 0");
  thread_ = std::thread([this] { thread_main(); });
}

ProgressEngine::~ProgressEngine() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

Work ProgressEngine::submit(CollectiveCall call, Mode mode) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_seq_ != 0) {
    throw core::Error("communicator is unusable after an earlier failure: " + error_);
  }
  done_cv_.wait(lock, [&] { return size_ < ring_.size() || failed_seq_ != 0; });
  if (failed_seq_ != 0) throw core::Error("communicator is unusable after an earlier failure: " + error_);
  call.seq = next_seq_++;
  if (mode == Mode::Sync && size_ == 0 && !busy_) {
    // Nothing ahead of us: run on the caller's thread, which keeps small synchronous collectives
    // at library latency instead of paying two thread wake-ups.
    busy_ = true;
    lock.unlock();
    run_one(call);
    lock.lock();
    busy_ = false;
    lock.unlock();
    work_cv_.notify_one();  // async work may have been queued behind us
    wait_for(call.seq);     // throws if it failed
    return Work();
  }
  ring_[(head_ + size_) % ring_.size()] = call;
  ++size_;
  lock.unlock();
  work_cv_.notify_one();
  if (mode == Mode::Sync) {
    wait_for(call.seq);
    return Work();
  }
  return Work(this, call.seq);
}

void ProgressEngine::run_one(const CollectiveCall& call) {
  std::string error;
  bool skip = false;
  // Taken here, after the hand-off: launch -> start_ns is queueing, start_ns -> done_ns execution.
  const std::int64_t start_ns = core::now_ns();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    skip = failed_seq_ != 0;  // after a failure nothing else is executed
  }
  if (!skip) {
    CollectiveWatchdog* watchdog = watchdog_.load();
    if (watchdog) watchdog->begin(call);
    try {
      executor_(call);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (watchdog) watchdog->end();
  }
  const std::int64_t done_ns = core::now_ns();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t slot = call.seq % done_seq_.size();
    done_seq_[slot] = call.seq;
    start_ns_[slot] = start_ns;
    done_ns_[slot] = done_ns;
    if (!error.empty() && failed_seq_ == 0) {
      failed_seq_ = call.seq;
      error_ = std::string(collective_name(call.kind)) + " #" + std::to_string(call.seq) + " failed: " + error;
    }
    completed_seq_.store(call.seq, std::memory_order_release);
  }
  done_cv_.notify_all();
}

void ProgressEngine::thread_main() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return (size_ > 0 && !busy_) || (stop_ && size_ == 0 && !busy_); });
    if (size_ == 0) return;  // stop requested and queue drained
    const CollectiveCall call = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --size_;
    busy_ = true;
    lock.unlock();
    run_one(call);
    lock.lock();
    busy_ = false;
  }
}

bool ProgressEngine::is_complete(std::uint64_t seq) { return completed_seq_.load(std::memory_order_acquire) >= seq; }

void ProgressEngine::wait_for(std::uint64_t seq) {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return completed_seq_.load(std::memory_order_acquire) >= seq; });
  if (failed_seq_ != 0 && seq >= failed_seq_) throw core::Error(error_);
}

std::int64_t ProgressEngine::completion_ns(std::uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t slot = seq % done_seq_.size();
  return done_seq_[slot] == seq ? done_ns_[slot] : 0;
}

std::int64_t ProgressEngine::start_ns(std::uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t slot = seq % done_seq_.size();
  return done_seq_[slot] == seq ? start_ns_[slot] : 0;
}

void ProgressEngine::wait_all() {
  std::uint64_t last;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last = next_seq_ - 1;
  }
  wait_for(last);
}

}  // namespace microddp::comm
