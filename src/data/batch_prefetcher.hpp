// batch_prefetcher.hpp — a loader thread that prepares the batches of the next steps while the
// current step computes, so the step never waits for its input (docs/design.md, invariants).
//
// The caller owns `depth` slots (buffers sized once at start-up: pinned host memory on a GPU, so the
// upload from them is truly asynchronous). The loader thread fills them with consecutive batches
// b, b+1, ... in order, each with the caller's fill function; the step takes batch b with
// acquire(b) — which blocks only when the loader has not finished it yet: that wait is the data
// time the step is *exposed* to — and gives the slot back with release(b) once nothing reads it
// any more (on a GPU: after the step's synchronisation, which its upload precedes), so the loader
// can refill it with batch b + depth.
//
// Contract:
//   * Batches are handed out in order, each exactly once: acquire(b) must name the batch after the
//     last one acquired (the first is `first_batch`), release(b) the oldest one held. Anything
//     else is a programming error (core::Error), so a skipped or repeated batch cannot go unnoticed.
//   * acquire(b) returns only after fill(b, slot) has returned on the loader thread, and the
//     loader touches the slot again only after release(b): the mutex hand-over orders every write
//     of the fill before every read of the step (tests/data run this under ThreadSanitizer).
//   * An exception thrown by fill (e.g. an unreadable file) is rethrown by the acquire() of that
//     batch, on the step's thread; the loader stops there.
//   * Nothing allocates after construction; the destructor stops the thread (a fill in progress is
//     finished first).
//   * Timing: fill time on the loader thread is "prepared in the background"; the time acquire()
//     blocked is "exposed". Both are totals since construction (background_ns(), exposed_ns()).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace microddp::data {

class BatchPrefetcher {
 public:
  // Fills slot `slot` (an index in [0, depth)) with batch `batch`; runs on the loader thread.
  using FillFn = std::function<void(std::int64_t batch, int slot)>;

  // depth >= 1 slots; the loader starts filling batches first_batch, first_batch + 1, ... at once.
  BatchPrefetcher(int depth, std::int64_t first_batch, FillFn fill);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // Blocks until batch `batch` is filled and returns its slot index, batch % depth (the batches held
  // and in progress are fewer than depth apart, so their slots differ).
  int acquire(std::int64_t batch);
  // The slot of `batch` (acquired, the oldest one held) may be refilled.
  void release(std::int64_t batch);

  int depth() const { return depth_; }
  // Nanoseconds acquire() blocked, and nanoseconds the loader spent filling, since construction.
  std::int64_t exposed_ns() const;
  std::int64_t background_ns() const;

 private:
  void run();

  const int depth_;
  const FillFn fill_;
  mutable std::mutex mutex_;
  std::condition_variable filled_;  // the loader finished a batch (or failed)
  std::condition_variable freed_;   // the step released a slot (or the prefetcher is closing)
  // Batches [released_end_, filled_end_) are filled; [released_end_, acquired_end_) are held by the
  // step; the loader fills batch filled_end_ next, once filled_end_ < released_end_ + depth_.
  std::int64_t released_end_, acquired_end_, filled_end_;
  std::exception_ptr error_;  // fill's exception for batch filled_end_ (the loader has stopped)
  bool closing_ = false;
  std::int64_t exposed_ns_ = 0, background_ns_ = 0;
  std::thread loader_;  // last: started when every member above is ready
};

}  // namespace microddp::data
