// prefetching_input.cpp — slots, the loader's fill and the step's upload (see prefetching_input.hpp).
#include "ddp/prefetching_input.hpp"

#include <exception>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/error.hpp"
#include "core/log.hpp"

namespace microddp::ddp {

namespace {
// Upload events of the features and the labels; each is waited for in the load() that records it,
// so the next load() may record it again (ops.hpp's rule for reusing a slot).
constexpr int kInputEvent = 0, kLabelEvent = 1;
// The loader runs at nice 10 (Linux: a thread's own priority): it only prepares what the step will
// need later, so where cores are short (ranks x (compute + communication + loader) threads on fewer
// cores) it should not preempt a compute thread that its peers wait for. At np 2 on 2 cores the
// median step of `train` rose from 3.5 to 5.8 ms with the loader at normal priority and stayed
// within noise of --prefetch 0 at nice 10 (docs/performance.md, "Input prefetching").
constexpr int kLoaderNice = 10;
}  // namespace

PrefetchingInput::PrefetchingInput(kernels::Ops& ops, const model::MlpConfig& model, std::uint64_t seed,
                                   std::int64_t global_batch, int rank, int world, float* model_input, int depth)
    : ops_(ops),
      depth_(depth),
      rows_(model, seed, global_batch, rank, world),
      row_scratch_(static_cast<std::size_t>(rows_.sampler().local_count()), 0),
      model_input_(model_input) {
  MDDP_CHECK(depth >= 1 && depth <= kMaxDepth,
             "prefetching input: depth must lie in [1, " << kMaxDepth << "], got " << depth);
  const std::int64_t rows = data::Sampler::max_local_count(global_batch, world);
  slot_x_.reserve(static_cast<std::size_t>(depth));
  slot_y_.reserve(static_cast<std::size_t>(depth));
  for (int i = 0; i < depth; ++i) {
    slot_x_.emplace_back(ops, rows * model.in_dim);
    slot_y_.emplace_back(ops, rows);
  }
  labels_ = kernels::OpsBuffer<std::int32_t>(ops, rows);
}

PrefetchingInput::~PrefetchingInput() {
  try {
    stop();
  } catch (const std::exception& e) {
    MDDP_WARN("prefetching input destroyed with a failed upload: " << e.what());
  }
}

void PrefetchingInput::stop() {
  if (prefetcher_ != nullptr) background_ns_ += prefetcher_->background_ns();
  prefetcher_.reset();  // joins the loader: it writes into the slots
  next_batch_ = -1;
  if (held_ >= 0) {
    // A GPU upload from a slot may still be queued: the slot is refilled or freed next.
    held_ = -1;
    ops_.synchronize();
  }
}

void PrefetchingInput::restart() { stop(); }

void PrefetchingInput::fill_slot(std::int64_t batch, int slot) {
  thread_local bool lowered = false;  // the loader thread's first fill
  if (!lowered) {
    lowered = true;
#if defined(__linux__)
    // Best effort: if it fails, the loader keeps the normal priority.
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kLoaderNice);
#endif
  }
  const auto s = static_cast<std::size_t>(slot);
  rows_.fill(batch, slot_x_[s].data(), slot_y_[s].data(), row_scratch_.data());
  batches_filled_.fetch_add(1, std::memory_order_relaxed);
}

void PrefetchingInput::load(std::int64_t batch, bool nan_input) {
  if (prefetcher_ == nullptr) {
    // The first load names the first batch (a resume starts later): start the loader there.
    MDDP_CHECK(batch >= 0, "prefetching input: batch " << batch << " requested");
    prefetcher_ = std::make_unique<data::BatchPrefetcher>(depth_, batch,
                                                          [this](std::int64_t b, int slot) { fill_slot(b, slot); });
  } else {
    MDDP_CHECK(batch == next_batch_, "prefetching input: batch " << batch << " requested, but the next batch is "
                                                                 << next_batch_
                                                                 << " (batches are loaded in consecutive order)");
  }
  next_batch_ = batch + 1;
  if (held_ >= 0) {
    // GPU: the step synchronised since the last load(), so its upload from that slot is done.
    prefetcher_->release(held_);
    held_ = -1;
  }
  const auto slot = static_cast<std::size_t>(prefetcher_->acquire(batch));
  const std::int64_t rows = rows_.sampler().local_count();
  float* x = slot_x_[slot].data();
  if (nan_input) poison_first_input(x);  // the slot is the step's until released
  ops_.upload_async(kInputEvent, model_input_, x,
                    static_cast<std::size_t>(rows * rows_.source().in_dim()) * sizeof(float));
  ops_.upload_async(kLabelEvent, labels_.data(), slot_y_[slot].data(),
                    static_cast<std::size_t>(rows) * sizeof(std::int32_t));
  ops_.wait_for_upload(kInputEvent);
  ops_.wait_for_upload(kLabelEvent);
  if (ops_.completes_on_return()) {
    prefetcher_->release(batch);  // copied already
  } else {
    held_ = batch;
  }
}

void PrefetchingInput::set_source(const data::DataSource& source) {
  MDDP_CHECK(prefetcher_ == nullptr, "prefetching input: set_source after the first load");
  rows_.set_source(source);
}

void PrefetchingInput::set_epochs(const data::EpochSampler& epochs, std::int64_t accum_steps) {
  MDDP_CHECK(prefetcher_ == nullptr, "prefetching input: set_epochs after the first load");
  rows_.set_epochs(epochs, accum_steps);
}

BackgroundWork PrefetchingInput::background() const {
  BackgroundWork w;
  w.depth = depth_;
  // background_ns() is read under the prefetcher's mutex, after the fills it counts returned.
  w.ns = background_ns_ + (prefetcher_ != nullptr ? prefetcher_->background_ns() : 0);
  w.batches = batches_filled_.load(std::memory_order_relaxed);
  return w;
}

}  // namespace microddp::ddp
