// tiled_gemm.cpp — the task pool and the tiling (tiled_gemm.hpp says why).
#include "kernels/cpu/tiled_gemm.hpp"

#include <cblas.h>

#include <algorithm>

namespace microddp::kernels {

TaskPool::TaskPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void TaskPool::take_tasks() {
  for (;;) {
    std::int64_t task = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= tasks_) return;
      task = next_++;
    }
    (*fn_)(task);
  }
}

void TaskPool::work() {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    take_tasks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

void TaskPool::run(std::int64_t tasks, const std::function<void(std::int64_t)>& fn) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {  // nothing to share: no wake-up
    for (std::int64_t t = 0; t < tasks; ++t) fn(t);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    tasks_ = tasks;
    next_ = 0;
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  take_tasks();
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return busy_ == 0; });
  fn_ = nullptr;
}

void tiled_sgemm(TaskPool& pool, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc) {
  const std::int64_t row_tiles = (m + kTileRows - 1) / kTileRows, col_tiles = (n + kTileCols - 1) / kTileCols;
  pool.run(row_tiles * col_tiles, [&](std::int64_t t) {
    const std::int64_t i0 = t / col_tiles * kTileRows, j0 = t % col_tiles * kTileCols;
    const int mt = static_cast<int>(std::min<std::int64_t>(kTileRows, m - i0));
    const int nt = static_cast<int>(std::min<std::int64_t>(kTileCols, n - j0));
    // Rows i0.. of op(A): rows of A, or columns of the stored (k, m) A; columns j0.. of op(B) likewise.
    const float* at = trans_a ? a + i0 : a + i0 * lda;
    const float* bt = trans_b ? b + j0 * ldb : b + j0;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, mt, nt, k,
                alpha, at, lda, bt, ldb, beta, c + i0 * ldc + j0, ldc);
  });
}

}  // namespace microddp::kernels
