// collective_watchdog.cpp — deadline thread for the executing collective.
#include "comm/runtime/collective_watchdog.hpp"

#include <chrono>

#include "core/error.hpp"
#include "core/timer.hpp"

namespace microddp::comm {

CollectiveWatchdog::CollectiveWatchdog(double timeout_s, OnTimeout on_timeout)
    : timeout_ns_(static_cast<std::int64_t>(timeout_s * 1e9)), on_timeout_(std::move(on_timeout)) {
  MDDP_CHECK(timeout_s > 0.0, "watchdog timeout must be positive, got " << timeout_s);
  thread_ = std::thread([this] { thread_main(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CollectiveWatchdog::begin(const CollectiveCall& call, const char* label) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    active_ = true;
    current_ = call;
    label_ = label;
    since_ns_ = core::now_ns();
  }
  cv_.notify_all();
}

void CollectiveWatchdog::end() {
  std::lock_guard<std::mutex> lock(mutex_);
  active_ = false;  // no notify needed: the thread re-checks when its deadline passes
}

void CollectiveWatchdog::thread_main() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (!active_) {
      cv_.wait(lock);
      continue;
    }
    const std::int64_t waited = core::now_ns() - since_ns_;
    if (waited >= timeout_ns_) {
      const CollectiveCall call = current_;
      const char* label = label_;
      lock.unlock();
      on_timeout_(call, label, static_cast<double>(waited) * 1e-9);
      return;
    }
    cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns_ - waited));
  }
}

}  // namespace microddp::comm
