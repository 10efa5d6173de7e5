// test_mutants.cu — the emulator can fail: mutant copies of real kernels, each with one bug a GPU
// would show, give wrong results (or a fault) on the emulated device, while the real kernels, run
// the same way, are right.
//   * bias_grad without its trailing __syncthreads(): a thread that moves on to the next tile
//     overwrites partial[][] before row-lane 0 has read it. Visible only when one block handles
//     several tiles (a grid-stride loop: CUDA_EMU_GRID_CAP makes that happen with the real launch
//     geometry) and when the threads do not happen to run in the one harmless order (forward).
//   * relu_backward reading y[i + 1]: an off-by-one index, wrong values.
//   * scale with `i <= n`: writes one element past the array; caught by the allocation's red zone
//     when the memory is freed.
// Also runs the communication kernels (src/comm/gpu/gpu_comm_kernels.cuh), which the emulated build
// does not compile otherwise while it has no NCCL.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "comm/gpu/gpu_comm_kernels.cuh"
#include "emu_test_util.hpp"
#include "kernels/cuda/elementwise_kernels.cuh"
#include "kernels/cuda/launch.hpp"
#include "kernels/cuda/reduction_kernels.cuh"
#include "kernels/cuda_kernels.hpp"
#include "kernels/launch_geometry.hpp"

namespace microddp::kernels::gpu {
namespace {

// bias_grad_kernel (reduction_kernels.cuh) with the trailing __syncthreads() removed.
__global__ void bias_grad_kernel_without_trailing_sync(float* __restrict__ db, const float* __restrict__ dy,
                                                       std::int64_t rows, std::int64_t cols) {
  __shared__ float partial[kBiasGradRowLanes][kBiasGradCols];
  const std::int64_t tiles = (cols + kBiasGradCols - 1) / kBiasGradCols;
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::int64_t col = tile * kBiasGradCols + threadIdx.x;
    float sum = 0.0f;
    if (col < cols) {
      for (std::int64_t r = threadIdx.y; r < rows; r += kBiasGradRowLanes) sum += dy[r * cols + col];
    }
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && col < cols) {
      float total = partial[0][threadIdx.x];
      for (unsigned lane = 1; lane < kBiasGradRowLanes; ++lane) total += partial[lane][threadIdx.x];
      db[col] += total;
    }
  }
}

// relu_backward_kernel (elementwise_kernels.cuh) with an off-by-one index into y.
__global__ void relu_backward_kernel_off_by_one(float* __restrict__ dy, const float* __restrict__ y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dy[i] = kernels::relu_backward(dy[i], y[i + 1]);
}

// scale_kernel (elementwise_kernels.cuh) with `<=` in the loop bound.
__global__ void scale_kernel_one_past(float* __restrict__ x, float alpha, std::int64_t n) {
  for (std::int64_t i = first_index(); i <= n; i += grid_stride()) x[i] *= alpha;
}

using cuda_emu::test::DeviceBuffer;

std::vector<float> normal(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

class Mutants : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_EQ(0, cudaEmuSetSchedule("shuffle"));
    cudaEmuSetGridCap(0);
  }
};

// db = column sums of dy (rows x cols) computed by `kernel` on `blocks` blocks; true if every
// column is within the float summation bound of the float64 sum.
template <auto Kernel>
bool bias_grad_is_right(unsigned blocks) {
  const std::int64_t rows = 64, cols = 6 * kBiasGradCols;  // 6 tiles
  const auto dy = normal(static_cast<std::size_t>(rows * cols), 7);
  DeviceBuffer<float> ddy(dy.size()), ddb(static_cast<std::size_t>(cols));
  ddy.upload(dy);
  EXPECT_EQ(cudaSuccess, cudaMemset(ddb.get(), 0, ddb.bytes()));
  MDDP_LAUNCH(Kernel, blocks, dim3(kBiasGradCols, kBiasGradRowLanes), 0, nullptr)(ddb.get(), ddy.get(), rows, cols);
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
  const auto db = ddb.download();
  for (std::int64_t j = 0; j < cols; ++j) {
    double want = 0.0, mag = 0.0;
    for (std::int64_t r = 0; r < rows; ++r) {
      want += dy[static_cast<std::size_t>(r * cols + j)];
      mag += std::fabs(dy[static_cast<std::size_t>(r * cols + j)]);
    }
    if (!(std::fabs(db[static_cast<std::size_t>(j)] - want) <= 2.0 * (rows + 1) * std::ldexp(1.0, -24) * mag))
      return false;
  }
  return true;
}

TEST_F(Mutants, BiasGradWithoutTrailingSyncIsCaughtWhenABlockLoopsOverTiles) {
  for (const char* schedule : {"forward", "reverse", "shuffle", "shuffle:99"}) {
    SCOPED_TRACE(schedule);
    ASSERT_EQ(0, cudaEmuSetSchedule(schedule));
    EXPECT_TRUE(bias_grad_is_right<bias_grad_kernel>(1)) << "the real kernel, one block for six tiles";
    EXPECT_TRUE(bias_grad_is_right<bias_grad_kernel>(6)) << "the real kernel, one block per tile";
    // One block per tile: the missing barrier guards nothing, so no emulator (or GPU) can see it.
    EXPECT_TRUE(bias_grad_is_right<bias_grad_kernel_without_trailing_sync>(6));
    const bool mutant_right = bias_grad_is_right<bias_grad_kernel_without_trailing_sync>(1);
    if (std::string(schedule) == "forward") {
      // Row-lane 0 (threads 0-31) runs first after the barrier and reads the partials before the
      // others overwrite them: forward order hides the race, which is why it is not the default.
      EXPECT_TRUE(mutant_right);
    } else {
      EXPECT_FALSE(mutant_right) << "the mutant must give a wrong result";
    }
  }
}

TEST_F(Mutants, GridCapExposesTheMissingSyncThroughTheRealLaunchGeometry) {
  // The real launcher's geometry gives one block per tile, so a grid-stride bug stays hidden...
  const std::int64_t rows = 64, cols = 6 * kBiasGradCols;
  const LaunchGeometry g = bias_grad_geometry(rows, cols);
  ASSERT_EQ(g.blocks, 6u);
  EXPECT_TRUE(bias_grad_is_right<bias_grad_kernel_without_trailing_sync>(g.blocks));
  // ...until CUDA_EMU_GRID_CAP makes each block loop over several tiles.
  cudaEmuSetGridCap(2);
  EXPECT_FALSE(bias_grad_is_right<bias_grad_kernel_without_trailing_sync>(g.blocks));
  EXPECT_TRUE(bias_grad_is_right<bias_grad_kernel>(g.blocks));
  // The product's launcher under the cap: still right.
  const auto dy = normal(static_cast<std::size_t>(rows * cols), 8);
  DeviceBuffer<float> ddy(dy.size()), ddb(static_cast<std::size_t>(cols));
  ddy.upload(dy);
  ASSERT_EQ(cudaSuccess, cudaMemset(ddb.get(), 0, ddb.bytes()));
  bias_grad(ddb.get(), ddy.get(), rows, cols, nullptr);
  const auto db = ddb.download();
  for (std::int64_t j = 0; j < cols; ++j) {
    double want = 0.0, mag = 0.0;
    for (std::int64_t r = 0; r < rows; ++r) {
      want += dy[static_cast<std::size_t>(r * cols + j)];
      mag += std::fabs(dy[static_cast<std::size_t>(r * cols + j)]);
    }
    ASSERT_NEAR(db[static_cast<std::size_t>(j)], want, 2.0 * (rows + 1) * std::ldexp(1.0, -24) * mag) << j;
  }
}

TEST_F(Mutants, OffByOneIndexGivesWrongValues) {
  const std::int64_t n = 1000;
  auto y = normal(static_cast<std::size_t>(n), 3);
  for (float& v : y) v = v > 0.0f ? v : 0.0f;
  const auto g = normal(static_cast<std::size_t>(n), 4);
  std::vector<float> want(g);
  for (std::int64_t i = 0; i < n; ++i)
    want[static_cast<std::size_t>(i)] =
        kernels::relu_backward(g[static_cast<std::size_t>(i)], y[static_cast<std::size_t>(i)]);
  DeviceBuffer<float> dg(g.size()), dyv(y.size());
  dyv.upload(y);
  const LaunchGeometry geo = grid_stride_geometry(n);
  dg.upload(g);
  MDDP_LAUNCH(relu_backward_kernel, geo.blocks, geo.threads, 0, nullptr)(dg.get(), dyv.get(), n);
  EXPECT_EQ(dg.download(), want) << "the real kernel";
  dg.upload(g);
  MDDP_LAUNCH(relu_backward_kernel_off_by_one, geo.blocks, geo.threads, 0, nullptr)(dg.get(), dyv.get(), n);
  EXPECT_NE(dg.download(), want) << "the mutant must give wrong values";
}

TEST_F(Mutants, WriteOnePastTheEndIsCaughtByTheRedZone) {
  const std::int64_t n = 1000;
  const auto x = normal(static_cast<std::size_t>(n), 5);
  const LaunchGeometry geo = grid_stride_geometry(n);
  {
    DeviceBuffer<float> dx(x.size());
    dx.upload(x);
    MDDP_LAUNCH(scale_kernel, geo.blocks, geo.threads, 0, nullptr)(dx.get(), 2.0f, n);
    EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize());
  }
  EXPECT_EQ(cudaSuccess, cudaGetLastError()) << "the real kernel stays inside its array";
  float* p = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&p, x.size() * sizeof(float)));
  ASSERT_EQ(cudaSuccess, cudaMemcpy(p, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  MDDP_LAUNCH(scale_kernel_one_past, geo.blocks, geo.threads, 0, nullptr)(p, 2.0f, n);
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  EXPECT_EQ(cudaErrorIllegalAddress, cudaFree(p)) << "the mutant wrote past the end";
  cuda_emu::test::expect_fault(cudaErrorIllegalAddress, "past the end of the 4000-byte allocation");
}

}  // namespace
}  // namespace microddp::kernels::gpu

namespace microddp::comm::gpu {
namespace {

using cuda_emu::test::DeviceBuffer;

template <typename T>
void reduce_case(core::ReduceOp op) {
  const std::int64_t n = 70001;  // not a multiple of the block
  std::vector<T> a(static_cast<std::size_t>(n)), b(a.size()), want(a.size());
  for (std::int64_t i = 0; i < n; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<T>((i * 37) % 1001) - static_cast<T>(500);
    b[static_cast<std::size_t>(i)] = static_cast<T>((i * 91) % 997) - static_cast<T>(498);
    want[static_cast<std::size_t>(i)] =
        kernels::reduce_pair(op, a[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)]);
  }
  DeviceBuffer<T> da(a.size()), db(b.size());
  da.upload(a);
  db.upload(b);
  const kernels::LaunchGeometry g = kernels::grid_stride_geometry(n);
  MDDP_LAUNCH(reduce_kernel<T>, g.blocks, g.threads, 0, nullptr)(da.get(), da.get(), db.get(), n, op);  // in place
  EXPECT_EQ(da.download(), want) << core::reduce_op_name(op);
}

TEST(CommKernels, ReduceAndScaleMatchTheHost) {
  for (core::ReduceOp op : {core::ReduceOp::Sum, core::ReduceOp::Max, core::ReduceOp::Min}) {
    reduce_case<double>(op);
    reduce_case<std::int32_t>(op);
    reduce_case<std::int64_t>(op);
  }
  std::vector<double> x(5000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.25 * static_cast<double>(i) - 7.0;
  DeviceBuffer<double> dx(x.size());
  dx.upload(x);
  const kernels::LaunchGeometry g = kernels::grid_stride_geometry(static_cast<std::int64_t>(x.size()));
  MDDP_LAUNCH(scale_f64_kernel, g.blocks, g.threads, 0, nullptr)
  (dx.get(), 1.0 / 3.0, static_cast<std::int64_t>(x.size()));
  const auto got = dx.download();
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], x[i] * (1.0 / 3.0)) << i;
}

}  // namespace
}  // namespace microddp::comm::gpu
