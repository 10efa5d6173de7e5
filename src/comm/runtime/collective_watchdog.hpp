// collective_watchdog.hpp — turns a hang inside a collective into a clear error.
//
// The classic failure of distributed training is a silent hang: one rank skipped a collective,
// was stopped (SIGSTOP, a stuck file system, a dead node that MPI has not noticed), or issued a
// different one, and every other rank waits forever inside MPI. A blocking MPI call cannot be
// interrupted, so the watchdog is a separate thread that watches the collective currently
// executing on the communication thread; when it has run longer than the timeout it calls
// on_timeout (which reports the collective — kind, sequence number, count, dtype — and aborts
// the job). The watchdog sleeps on a condition variable between events: no polling cost.
//
// Contract: begin()/end() bracket each executing collective (called by the progress engine) or
// another blocking exchange of the communicator (the desync check: begin(call, "sync check")); at
// most one is active at a time. on_timeout runs on the watchdog thread at most once; `label` is the
// one given to begin() (nullptr for collectives).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "comm/types.hpp"

namespace microddp::comm {

class CollectiveWatchdog {
 public:
  using OnTimeout = std::function<void(const CollectiveCall& call, const char* label, double waited_s)>;

  CollectiveWatchdog(double timeout_s, OnTimeout on_timeout);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // `label`: a string literal naming a non-collective exchange (nullptr: `call` itself runs).
  void begin(const CollectiveCall& call, const char* label = nullptr);
  void end();
  double timeout_s() const { return static_cast<double>(timeout_ns_) * 1e-9; }

 private:
  void thread_main();

  std::int64_t timeout_ns_;
  OnTimeout on_timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool active_ = false;
  bool stop_ = false;
  CollectiveCall current_;
  const char* label_ = nullptr;
  std::int64_t since_ns_ = 0;
  std::thread thread_;
};

}  // namespace microddp::comm
