// batch_prefetcher.cpp — the loader thread and the in-order hand-over (see batch_prefetcher.hpp).
#include "data/batch_prefetcher.hpp"

#include <utility>

#include "core/error.hpp"
#include "core/timer.hpp"

namespace microddp::data {

BatchPrefetcher::BatchPrefetcher(int depth, std::int64_t first_batch, FillFn fill)
    : depth_(depth),
      fill_(std::move(fill)),
      released_end_(first_batch),
      acquired_end_(first_batch),
      filled_end_(first_batch) {
  MDDP_CHECK(depth >= 1, "batch prefetcher: depth must be >= 1, got " << depth);
  MDDP_CHECK(first_batch >= 0, "batch prefetcher: first batch must be >= 0, got " << first_batch);
  MDDP_CHECK(static_cast<bool>(fill_), "batch prefetcher: no fill function");
  loader_ = std::thread([this] { run(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  freed_.notify_all();
  loader_.join();
}

void BatchPrefetcher::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    freed_.wait(lock, [this] { return closing_ || filled_end_ < released_end_ + depth_; });
    if (closing_) return;
    const std::int64_t batch = filled_end_;
    const int slot = static_cast<int>(batch % depth_);
    // The slot is ours until filled_end_ moves past it: fill without holding the lock, so the step
    // can acquire and release other batches meanwhile.
    lock.unlock();
    const std::int64_t t0 = core::now_ns();
    std::exception_ptr error;
    try {
      fill_(batch, slot);
    } catch (...) {
      error = std::current_exception();
    }
    const std::int64_t t1 = core::now_ns();
    lock.lock();
    background_ns_ += t1 - t0;
    if (error) {
      error_ = error;
      filled_.notify_all();
      return;  // the step rethrows it when it asks for this batch
    }
    ++filled_end_;
    filled_.notify_all();
  }
}

int BatchPrefetcher::acquire(std::int64_t batch) {
  std::unique_lock<std::mutex> lock(mutex_);
  MDDP_CHECK(batch == acquired_end_, "batch prefetcher: batch " << batch << " requested, but the next batch is "
                                                                << acquired_end_ << " (batches are taken in order)");
  MDDP_CHECK(acquired_end_ < released_end_ + depth_,
             "batch prefetcher: batch " << batch << " requested while " << depth_ << " batch(es) are held");
  if (filled_end_ <= batch && !error_) {
    const std::int64_t t0 = core::now_ns();
    filled_.wait(lock, [&] { return filled_end_ > batch || error_; });
    exposed_ns_ += core::now_ns() - t0;
  }
  if (filled_end_ <= batch) std::rethrow_exception(error_);
  ++acquired_end_;
  return static_cast<int>(batch % depth_);
}

void BatchPrefetcher::release(std::int64_t batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    MDDP_CHECK(batch == released_end_ && released_end_ < acquired_end_,
               "batch prefetcher: release of batch " << batch << ", but the oldest batch held is "
                                                     << (released_end_ < acquired_end_ ? released_end_ : -1));
    ++released_end_;
  }
  freed_.notify_one();
}

std::int64_t BatchPrefetcher::exposed_ns() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exposed_ns_;
}

std::int64_t BatchPrefetcher::background_ns() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return background_ns_;
}

}  // namespace microddp::data
