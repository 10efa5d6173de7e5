// test_device_code.cu — device code on the emulated device: the index variables, __shared__ per
// block, __syncthreads as a barrier (and what a missing one does under each schedule), the warp
// shuffles and __syncwarp, the grid cap, plain-call execution of kernels that never synchronise,
// the launch checks, and the loud failures: divergent barriers and warp exchanges, a mask without
// the calling lane, a shuffle reading outside its mask, a kernel that synchronises only after its
// first launch, a host pointer handed to a kernel. Compiled like a kernel source of the emulated
// build (device prelude force-included), launched with the product's MDDP_LAUNCH.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "emu_test_util.hpp"
#include "kernels/cuda/launch.hpp"

namespace cuda_emu::test {
namespace {

// ---- kernels ------------------------------------------------------------------------------------
__global__ void record_indices(std::uint32_t* out) {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned per_block = blockDim.x * blockDim.y * blockDim.z;
  // One word per thread: its own indices packed, so a wrong index variable shows.
  out[b * per_block + t] = (threadIdx.x) | (threadIdx.y << 4) | (threadIdx.z << 8) | (blockIdx.x << 12) |
                           (blockIdx.y << 16) | (blockIdx.z << 20);
}

// Reverses each block's 256 values through shared memory: correct only with the barrier.
template <bool kBarrier>
__global__ void reverse_in_block(const int* in, int* out) {
  __shared__ int tile[256];
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = in[i];
  if (kBarrier) __syncthreads();
  out[i] = tile[blockDim.x - 1 - threadIdx.x];
}

// Warp sums with __shfl_down_sync (lane 0 gets the total) and __shfl_xor_sync (every lane does).
__global__ void warp_sums(const int* in, int* down_total, int* xor_all) {
  const unsigned lane = threadIdx.x % 32;
  int v = in[threadIdx.x];
  int d = v;
  for (int offset = 16; offset > 0; offset >>= 1) d += __shfl_down_sync(0xffffffffu, d, static_cast<unsigned>(offset));
  if (lane == 0) down_total[threadIdx.x / 32] = d;
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  xor_all[threadIdx.x] = v;
}

// Inclusive scan within segments of 8 lanes (__shfl_up_sync with width), and a broadcast of each
// segment's lane 5 (__shfl_sync with width); doubles travel as 64 bits.
__global__ void segment_ops(const double* in, double* scan, double* bcast) {
  double v = in[threadIdx.x];
  for (unsigned d = 1; d < 8; d <<= 1) {
    const double up = __shfl_up_sync(0xffffffffu, v, d, 8);
    if (threadIdx.x % 8 >= d) v += up;
  }
  scan[threadIdx.x] = v;
  bcast[threadIdx.x] = __shfl_sync(0xffffffffu, in[threadIdx.x], 5, 8);
}

// Half-warps exchange in different branches with their own masks (legal: independent scheduling).
__global__ void half_warps(int* out) {
  const unsigned lane = threadIdx.x % 32;
  int v = static_cast<int>(lane);
  if (lane < 16) {
    v = __shfl_xor_sync(0x0000ffffu, v, 1);
  } else {
    __syncwarp(0xffff0000u);
    v = __shfl_xor_sync(0xffff0000u, v, 2);
  }
  out[threadIdx.x] = v;
}

__global__ void divergent_barrier(int* out) {
  if (threadIdx.x < 16) __syncthreads();  // the other threads never arrive: a bug
  out[threadIdx.x] = 1;
}

__global__ void shuffle_with_exited_lanes(int* out) {
  if (threadIdx.x % 32 < 8) return;  // lanes 0-7 leave, yet the mask names them
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}

__global__ void mask_without_self(int* out) { out[threadIdx.x] = __shfl_sync(0x1u, 7, 0); }

__global__ void shuffle_outside_mask(int* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, 1, 16);  // lane ^ 16 is not in the mask
}

__global__ void barrier_if(int sync, int* out) {
  if (sync != 0) __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = static_cast<int>(threadIdx.x);
}

// Grid-stride fill: the result does not depend on the grid size (valid under CUDA_EMU_GRID_CAP).
__global__ void grid_stride_iota(int* out, int n, int* grid_seen) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    out[i] = i;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *grid_seen = static_cast<int>(gridDim.x);
}

__global__ void write_one(int* p) { *p = 1; }

// ---- tests --------------------------------------------------------------------------------------
class DeviceCode : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, cudaEmuSetSchedule("shuffle"));
    cudaEmuSetGridCap(0);
  }
  void TearDown() override {
    EXPECT_EQ(0, cudaEmuSetSchedule("shuffle"));
    cudaEmuSetGridCap(0);
    EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize());
  }
};

TEST_F(DeviceCode, IndexVariablesIn3D) {
  const dim3 grid(3, 2, 2), block(4, 2, 3);
  const std::size_t n = 12 * 24;
  DeviceBuffer<std::uint32_t> out(n);
  MDDP_LAUNCH(record_indices, grid, block, 0, nullptr)(out.get());
  EMU_CHECK(cudaGetLastError());
  const auto got = out.download();
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 3; ++tz)
          for (unsigned ty = 0; ty < 2; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx) {
              const unsigned b = bx + 3 * (by + 2 * bz), t = tx + 4 * (ty + 2 * tz);
              ASSERT_EQ(got[b * 24 + t], tx | (ty << 4) | (tz << 8) | (bx << 12) | (by << 16) | (bz << 20));
            }
}

TEST_F(DeviceCode, BarrierMakesSharedMemoryWorkAndItsAbsenceShowsInEverySchedule) {
  const int blocks = 4;
  std::vector<int> in(256 * blocks), want(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * 7 + 3);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < 256; ++t)
      want[static_cast<std::size_t>(b * 256 + t)] = in[static_cast<std::size_t>(b * 256 + 255 - t)];
  DeviceBuffer<int> din(in.size()), dout(in.size());
  din.upload(in);
  for (const char* schedule : {"forward", "reverse", "shuffle", "shuffle:12345"}) {
    SCOPED_TRACE(schedule);
    ASSERT_EQ(0, cudaEmuSetSchedule(schedule));
    MDDP_LAUNCH(reverse_in_block<true>, blocks, 256, 0, nullptr)(din.get(), dout.get());
    EXPECT_EQ(dout.download(), want);
    MDDP_LAUNCH(reverse_in_block<false>, blocks, 256, 0, nullptr)(din.get(), dout.get());
    EXPECT_NE(dout.download(), want) << "without __syncthreads threads read slots not yet written";
  }
}

TEST_F(DeviceCode, WarpShuffles) {
  std::vector<int> in(64);
  for (int i = 0; i < 64; ++i) in[static_cast<std::size_t>(i)] = i * i - 100;
  DeviceBuffer<int> din(64), down(2), all(64);
  din.upload(in);
  MDDP_LAUNCH(warp_sums, 1, 64, 0, nullptr)(din.get(), down.get(), all.get());
  int sum0 = 0, sum1 = 0;
  for (int i = 0; i < 32; ++i) sum0 += in[static_cast<std::size_t>(i)];
  for (int i = 32; i < 64; ++i) sum1 += in[static_cast<std::size_t>(i)];
  EXPECT_EQ(down.download(), (std::vector<int>{sum0, sum1}));
  const auto a = all.download();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(a[static_cast<std::size_t>(i)], i < 32 ? sum0 : sum1) << i;

  std::vector<double> x(32);
  for (int i = 0; i < 32; ++i) x[static_cast<std::size_t>(i)] = 0.5 * i + 1.0;
  DeviceBuffer<double> dx(32), scan(32), bcast(32);
  dx.upload(x);
  MDDP_LAUNCH(segment_ops, 1, 32, 0, nullptr)(dx.get(), scan.get(), bcast.get());
  const auto s = scan.download(), b = bcast.download();
  for (int i = 0; i < 32; ++i) {
    double want = 0.0;
    for (int j = i / 8 * 8; j <= i; ++j) want += x[static_cast<std::size_t>(j)];
    EXPECT_EQ(s[static_cast<std::size_t>(i)], want) << i;
    EXPECT_EQ(b[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(i / 8 * 8 + 5)]) << i;
  }

  DeviceBuffer<int> halves(32);
  MDDP_LAUNCH(half_warps, 1, 32, 0, nullptr)(halves.get());
  const auto h = halves.download();
  for (int l = 0; l < 32; ++l) EXPECT_EQ(h[static_cast<std::size_t>(l)], l < 16 ? (l ^ 1) : (l ^ 2)) << l;
}

TEST_F(DeviceCode, DivergentBarrierFailsLoudly) {
  DeviceBuffer<int> out(64);
  MDDP_LAUNCH(divergent_barrier, 1, 64, 0, nullptr)(out.get());
  expect_fault(cudaErrorLaunchFailure, "divergent __syncthreads()");
}

TEST_F(DeviceCode, WarpExchangeWithExitedLanesFailsLoudly) {
  DeviceBuffer<int> out(32);
  MDDP_LAUNCH(shuffle_with_exited_lanes, 1, 32, 0, nullptr)(out.get());
  expect_fault(cudaErrorLaunchFailure, "has exited");
}

TEST_F(DeviceCode, MaskWithoutTheCallingLaneFailsLoudly) {
  DeviceBuffer<int> out(32);
  MDDP_LAUNCH(mask_without_self, 1, 32, 0, nullptr)(out.get());
  expect_fault(cudaErrorLaunchFailure, "does not name the calling lane");
}

TEST_F(DeviceCode, ShuffleReadingOutsideItsMaskFailsLoudly) {
  DeviceBuffer<int> out(32);
  MDDP_LAUNCH(shuffle_outside_mask, 1, 32, 0, nullptr)(out.get());
  expect_fault(cudaErrorLaunchFailure, "which is not in the mask");
}

TEST_F(DeviceCode, KernelsThatNeverSynchroniseRunAsPlainCallsAndAWrongGuessIsLoud) {
  DeviceBuffer<int> out(128);
  const cudaEmuCounters c0 = counters();
  MDDP_LAUNCH(barrier_if, 2, 64, 0, nullptr)(0, out.get());  // first launch: fibers, no barrier seen
  EMU_CHECK(cudaDeviceSynchronize());
  const cudaEmuCounters c1 = counters();
  EXPECT_EQ(c1.fiber_blocks - c0.fiber_blocks, 2u);
  MDDP_LAUNCH(barrier_if, 2, 64, 0, nullptr)(0, out.get());  // learnt: plain calls
  EMU_CHECK(cudaDeviceSynchronize());
  const cudaEmuCounters c2 = counters();
  EXPECT_EQ(c2.plain_blocks - c1.plain_blocks, 2u);
  EXPECT_EQ(c2.fiber_blocks, c1.fiber_blocks);
  MDDP_LAUNCH(barrier_if, 2, 64, 0, nullptr)(1, out.get());  // now it synchronises: cannot be honoured
  expect_fault(cudaErrorLaunchFailure, "CUDA_EMU_PLAIN_KERNELS=0");
  MDDP_LAUNCH(barrier_if, 2, 64, 0, nullptr)(1, out.get());  // and from then on it runs on fibers
  EMU_CHECK(cudaDeviceSynchronize());
  const auto got = out.download();
  for (int i = 0; i < 128; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], i % 64);
}

TEST_F(DeviceCode, GridCapKeepsGridStrideResults) {
  const int n = 10000;
  DeviceBuffer<int> out(n), seen(1);
  for (const unsigned cap : {0u, 1u, 3u}) {
    SCOPED_TRACE(cap);
    cudaEmuSetGridCap(cap);
    EMU_CHECK(cudaMemset(out.get(), 0, n * sizeof(int)));
    MDDP_LAUNCH(grid_stride_iota, (n + 255) / 256, 256, 0, nullptr)(out.get(), n, seen.get());
    EMU_CHECK(cudaGetLastError());
    const auto got = out.download();
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], i);
    EXPECT_EQ(seen.download()[0], cap == 0 ? (n + 255) / 256 : static_cast<int>(cap));
  }
}

TEST_F(DeviceCode, LaunchChecks) {
  DeviceBuffer<int> out(1);
  MDDP_LAUNCH(write_one, 1, 1025, 0, nullptr)(out.get());
  EXPECT_EQ(cudaErrorInvalidConfiguration, cudaGetLastError());
  MDDP_LAUNCH(write_one, 0, 32, 0, nullptr)(out.get());
  EXPECT_EQ(cudaErrorInvalidConfiguration, cudaGetLastError());
  MDDP_LAUNCH(write_one, 1, dim3(8, 8, 65), 0, nullptr)(out.get());
  EXPECT_EQ(cudaErrorInvalidConfiguration, cudaGetLastError());
  MDDP_LAUNCH(write_one, 1, 1, 16, nullptr)(out.get());
  EXPECT_EQ(cudaErrorNotSupported, cudaGetLastError()) << "dynamic shared memory is not emulated";
  EXPECT_EQ(cudaSuccess, cudaGetLastError()) << "launch configuration errors are not sticky";
  cudaStream_t s = nullptr;
  EMU_CHECK(cudaStreamCreate(&s));
  EMU_CHECK(cudaStreamDestroy(s));
  MDDP_LAUNCH(write_one, 1, 1, 0, s)(out.get());
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaGetLastError());
  const cudaEmuCounters c0 = counters();
  MDDP_LAUNCH(write_one, 1, 1, 0, nullptr)(out.get());
  EMU_CHECK(cudaGetLastError());
  EXPECT_EQ(counters().kernel_launches, c0.kernel_launches + 1);
  EXPECT_EQ(out.download()[0], 1);
}

TEST_F(DeviceCode, HostPointerArgumentIsAnIllegalAddress) {
  int host = 0;
  MDDP_LAUNCH(write_one, 1, 1, 0, nullptr)(&host);
  EXPECT_EQ(cudaErrorIllegalAddress, cudaGetLastError());
  EXPECT_EQ(host, 0) << "the kernel did not run";
  expect_fault(cudaErrorIllegalAddress, "argument 0");
  // Pinned host memory is mapped into the device: a kernel may use it.
  int* pinned = nullptr;
  EMU_CHECK(cudaMallocHost(&pinned, sizeof(int)));
  *pinned = 0;
  MDDP_LAUNCH(write_one, 1, 1, 0, nullptr)(pinned);
  EMU_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(*pinned, 1);
  EMU_CHECK(cudaFreeHost(pinned));
}

TEST_F(DeviceCode, KernelWritingPastItsAllocationIsCaughtWhenFreed) {
  int* p = nullptr;
  EMU_CHECK(cudaMalloc(&p, 4 * sizeof(int)));
  MDDP_LAUNCH(write_one, 1, 1, 0, nullptr)(p + 4);  // one past the end: inside the red zone
  EMU_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(cudaErrorIllegalAddress, cudaFree(p));
  expect_fault(cudaErrorIllegalAddress, "past the end of the 16-byte allocation");
}

}  // namespace
}  // namespace cuda_emu::test
