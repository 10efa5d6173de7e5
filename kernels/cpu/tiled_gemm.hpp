// tiled_gemm.hpp — the CPU GEMM whose bits do not depend on the thread count.
//
// Why: OpenBLAS (0.3.21, pthreads) splits C among its threads by rows and columns, and where a split
// falls decides which micro-kernel (a full 16x4 tile or an edge one) computes an element, and the
// edge kernels add in another order. Measured here (Haswell kernels, a 1024 x 10 x 512 product): 27
// of 10 240 elements differ between 1 and 2 threads. Slicing k into fixed blocks does not help
// (the same counts differ), so the split itself is taken from OpenBLAS: C is cut into tiles whose
// size depends only on the shape, each tile is one single-threaded sgemm, and the tiles are shared
// among `threads` threads. Every element is then computed by the same call whatever the thread
// count: `evaluate` at np 1 with 2 threads equals np 2 with 1 thread, bit for bit (tests/io/model_cli.sh).
//
// Tiles: kTileRows x kTileCols of C (multiples of every OpenBLAS sgemm kernel's unroll, so tiles
// hold whole micro-tiles); each tile packs its own slices of A and B, which costs a few percent of
// GEMM time at the model's sizes (docs/performance.md, "Thread-count-independent GEMM").
// Contract: row-major, as cblas_sgemm(CblasRowMajor, ...); OpenBLAS must run single-threaded
// (openblas_set_num_threads(1)) while this is used: the parallelism is ours.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace microddp::kernels {

// Runs fn(task) for every task in [0, tasks) on `threads` threads: the caller and threads - 1
// workers that sleep between calls. One call at a time (the Ops' thread).
class TaskPool {
 public:
  explicit TaskPool(int threads);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;
  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  void run(std::int64_t tasks, const std::function<void(std::int64_t)>& fn);

 private:
  void work();
  void take_tasks();
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(std::int64_t)>* fn_ = nullptr;
  std::int64_t tasks_ = 0, next_ = 0;
  int busy_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

inline constexpr std::int64_t kTileRows = 128, kTileCols = 128;

// C(m, n) = alpha op(A) op(B) + beta C, row-major with leading dimensions lda, ldb, ldc, in tiles
// of kTileRows x kTileCols shared among pool's threads.
void tiled_sgemm(TaskPool& pool, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace microddp::kernels
