// test_synthetic_device.cpp — the synthetic data set made on a GPU: the device generator's rows
// (kernels on CudaOps' stream, straight into device buffers) are fill's rows on the CPU, bit for bit,
// for batches of several shapes, read back after the generator queued them. Label cuda: without a
// CUDA device it exits 77, skipped (main: tests/kernels/cuda_test_main.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "data/synthetic_dataset.hpp"
#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"
#include "tests/kernels/cuda_test_main.hpp"

namespace microddp::data {
namespace {

TEST(SyntheticDevice, GeneratorOnTheGpuWritesFillsBits) {
  auto gpu = kernels::make_cuda_ops(0, false);
  for (const auto& [in_dim, classes] : {std::pair<std::int64_t, std::int64_t>{33, 5}, {128, 10}, {1, 2}}) {
    SyntheticDataset d(17, in_dim, classes);
    auto gen = d.make_device_generator(*gpu);
    ASSERT_NE(gen, nullptr);
    constexpr std::int64_t kMaxRows = 97;
    kernels::OpsBuffer<float> x(*gpu, kMaxRows * in_dim);
    kernels::OpsBuffer<std::int32_t> y(*gpu, kMaxRows);
    for (const auto& [first, count] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {0, 1}, {41, 19}, {5000, 97}}) {
      SCOPED_TRACE("in_dim " + std::to_string(in_dim) + " classes " + std::to_string(classes) + " first " +
                   std::to_string(first) + " count " + std::to_string(count));
      std::vector<float> x_cpu(static_cast<std::size_t>(count * in_dim)), x_gpu(x_cpu.size());
      std::vector<std::int32_t> y_cpu(static_cast<std::size_t>(count)), y_gpu(y_cpu.size());
      d.fill(first, count, x_cpu.data(), y_cpu.data());
      gen->fill(first, count, x.data(), y.data());  // queued; the copies below are ordered after it
      x.to_host(x_gpu.data(), 0, count * in_dim);
      y.to_host(y_gpu.data(), 0, count);
      EXPECT_EQ(std::memcmp(x_cpu.data(), x_gpu.data(), x_cpu.size() * sizeof(float)), 0);
      EXPECT_EQ(y_cpu, y_gpu);
    }
  }
}

}  // namespace
}  // namespace microddp::data

int main(int argc, char** argv) { return microddp::kernels::test::cuda_test_main(argc, argv); }
