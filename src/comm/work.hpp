// work.hpp — Work: the handle every collective returns.
// Contract: test() never blocks and returns true once the collective has completed (successfully
// or not); wait() blocks until it completes and throws core::Error with the backend's description
// if it failed. A Work is a small value (no allocation): a pointer to the issuing communicator's
// progress engine plus the collective's sequence number, so it must not outlive the communicator.
// A default-constructed Work is already complete (what synchronous calls return).
#pragma once

#include <cstdint>

namespace microddp::comm {

// Implemented by whatever tracks completion of a backend's collectives (the progress engine, a
// CUDA-event table for NCCL, ...).
class WorkSource {
 public:
  virtual ~WorkSource() = default;
  virtual bool is_complete(std::uint64_t seq) = 0;
  virtual void wait_for(std::uint64_t seq) = 0;  // throws on failure
  // core::now_ns() at which collective `seq` completed, measured where it ran (the communication
  // thread); 0 when unknown (not complete yet, or too old: only the most recent completions are kept).
  virtual std::int64_t completion_ns(std::uint64_t /*seq*/) { return 0; }
  // core::now_ns() at which collective `seq` STARTED EXECUTING (left the queue: the communication
  // thread picked it up; a stream backend: the stream reached it), with the same availability as
  // completion_ns(). Launch -> start is time spent queued behind earlier collectives; start ->
  // completion is time the collective was actually being worked on (perf/comm_busy.hpp).
  virtual std::int64_t start_ns(std::uint64_t /*seq*/) { return 0; }
};

class Work {
 public:
  Work() = default;
  Work(WorkSource* source, std::uint64_t seq) : source_(source), seq_(seq) {}

  bool test() const { return source_ == nullptr || source_->is_complete(seq_); }
  void wait() const {
    if (source_ != nullptr) source_->wait_for(seq_);
  }
  std::uint64_t seq() const { return seq_; }
  // When the collective completed (core::now_ns() clock), 0 if unknown. A default-constructed
  // (synchronous) Work has no timestamp: the caller's own clock after the call is the completion.
  std::int64_t completion_ns() const { return source_ != nullptr ? source_->completion_ns(seq_) : 0; }
  // When the collective started executing (same clock and availability as completion_ns()).
  std::int64_t start_ns() const { return source_ != nullptr ? source_->start_ns(seq_) : 0; }

 private:
  WorkSource* source_ = nullptr;
  std::uint64_t seq_ = 0;
};

}  // namespace microddp::comm
