// test_mlp_cuda.cpp — FullMLP on CudaOps, whose layers run fused GEMM epilogues (Ops::gemm_bias_act,
// gemm_bias_grad: one cublasLtMatmul each), against the same model on CpuOps (the unfused reference),
// and the number of device launches one forward + backward makes, asserted on the emulated device.
// Without a CUDA device it exits 77 (skipped), as the kernel tests.
// Tolerances: relative to the largest value of each compared array (logits, gradients): 1e-4 for fp32
// (a few GEMMs deep, each within ~(k + 2) u of exact; the summation orders differ), 1e-2 for tf32
// (inputs rounded to 10 mantissa bits) and bf16 (both sides use the same bf16 operands, but an
// activation that differs by one fp32 ulp may round to the neighbouring bf16, 2^-8 apart).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../kernels/cuda_test_main.hpp"
#include "core/precision.hpp"
#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"
#include "model/mlp.hpp"

#if defined(MICRODDP_TEST_CUDA_EMU)
#include "cuda_emu/counters.h"  // what the emulated device counted (tests only)
#endif

namespace microddp::model {
namespace {

constexpr std::int64_t kRows = 13;

MlpConfig small_config(std::int64_t depth) {
  MlpConfig c;
  c.in_dim = 20;
  c.width = 24;
  c.depth = depth;
  c.classes = 5;
  return c;
}

std::vector<float> inputs(std::int64_t n) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i) + 0.1f);
  return x;
}
std::vector<std::int32_t> labels(std::int64_t rows, std::int64_t classes) {
  std::vector<std::int32_t> y(static_cast<std::size_t>(rows));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>((i * 7 + 3) % classes);
  return y;
}

// One model on `ops`: forward + backward (overwrite), then forward + backward again accumulating
// (the unfused fallback on CudaOps); returns the logits of the first forward and the gradients.
struct Result {
  std::vector<float> logits, grads;
};
Result run(kernels::Ops& ops, core::Precision precision, std::int64_t depth) {
  const MlpConfig cfg = small_config(depth);
  FullMLP mlp(cfg, kRows, ops, precision);
  mlp.init(7);
  const auto x = inputs(kRows * cfg.in_dim);
  const auto y = labels(kRows, cfg.classes);
  kernels::OpsBuffer<float> dx(ops, kRows * cfg.in_dim);
  kernels::OpsBuffer<std::int32_t> dy(ops, kRows);
  dx.from_host(x.data(), 0, dx.count());
  dy.from_host(y.data(), 0, dy.count());
  Result r;
  const float* logits = mlp.forward(dx.data(), kRows);
  r.logits.resize(static_cast<std::size_t>(kRows * cfg.classes));
  ops.synchronize();
  ops.copy_to_host(r.logits.data(), logits, r.logits.size() * sizeof(float));
  (void)mlp.backward(dy.data(), 1.0f / kRows, nullptr, nullptr, /*accumulate=*/false);
  (void)mlp.forward(dx.data(), kRows);
  (void)mlp.backward(dy.data(), 1.0f / kRows, nullptr, nullptr, /*accumulate=*/true);
  r.grads.resize(static_cast<std::size_t>(mlp.flat_count()));
  mlp.grad_buffer().to_host(r.grads.data(), 0, mlp.flat_count());
  return r;
}

void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, double rel, const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  double scale = 0.0;
  for (float v : cpu) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  ASSERT_GT(scale, 0.0) << what << ": all zero, the comparison would prove nothing";
  for (std::size_t i = 0; i < cpu.size(); ++i) ASSERT_NEAR(gpu[i], cpu[i], rel * scale) << what << " element " << i;
}

TEST(MlpCuda, FusedLayersMatchTheCpuModel) {
  struct Case {
    core::Precision precision;
    bool tf32;
    double rel;
  };
  for (const Case c : {Case{core::Precision::Fp32, false, 1e-4}, Case{core::Precision::Fp32, true, 1e-2},
                       Case{core::Precision::Bf16, false, 1e-2}}) {
    SCOPED_TRACE(std::string(c.precision == core::Precision::Bf16 ? "bf16" : c.tf32 ? "tf32" : "fp32"));
    auto cpu = kernels::make_cpu_ops(1);
    auto gpu = kernels::make_cuda_ops(0, c.tf32);
    const Result want = run(*cpu, c.precision, 3);
    const Result got = run(*gpu, c.precision, 3);
    expect_close(got.logits, want.logits, c.rel, "logits");
    expect_close(got.grads, want.grads, c.rel, "gradients");
  }
}

#if defined(MICRODDP_TEST_CUDA_EMU)
// The launches of one forward + backward of a depth-D fp32 model (no hooks, input already in the
// model's buffer), counted by the emulated device. From mlp.cpp and cuda_ops.cpp:
//   forward, per layer (D + 1):        1 cublasLtMatmul (GEMM + bias (+ ReLU) epilogue)
//   softmax_xent:                      2 kernels (the rows, then the loss sum)
//   backward, per layer (D + 1):       1 cublasLtMatmul (dW with the BGRADB epilogue writing db)
//             per hidden layer (D):    1 cublasSgemm (dx) + 1 relu_backward kernel
// so D + 2 kernels and 3D + 2 GEMMs, 2D + 2 of them cuBLASLt, and no memset. Unfused (before), the
// same step made 3D + 4 kernels (+ D + 1 bias_act_forward, D + 1 bias_grad) and D + 1 memsets
// (zeroing each db before bias_grad accumulated into it), with the same 3D + 2 GEMMs.
// Accumulating (gradient accumulation micro-steps) keeps the bias gradient unfused, since the
// epilogue overwrites: D + 1 more bias_grad kernels, and D + 1 fewer cuBLASLt calls (plain sgemm).
TEST(MlpCuda, LaunchesPerForwardBackwardOnTheEmulatedDevice) {
  for (const std::int64_t depth : {std::int64_t{1}, std::int64_t{3}, std::int64_t{16}}) {
    for (const bool accumulate : {false, true}) {
      SCOPED_TRACE("depth " + std::to_string(depth) + (accumulate ? " accumulate" : " overwrite"));
      auto ops = kernels::make_cuda_ops(0, false);
      const MlpConfig cfg = small_config(depth);
      FullMLP mlp(cfg, kRows, *ops);
      mlp.init(1);
      const auto x = inputs(kRows * cfg.in_dim);
      const auto y = labels(kRows, cfg.classes);
      kernels::OpsBuffer<std::int32_t> dy(*ops, kRows);
      kernels::OpsBuffer<float> loss(*ops, 1);
      ops->copy_from_host(mlp.input(), x.data(), x.size() * sizeof(float));
      dy.from_host(y.data(), 0, dy.count());
      ops->synchronize();
      cudaEmuResetCounters();
      (void)mlp.forward(mlp.input(), kRows);
      mlp.backward_into(dy.data(), 1.0f / kRows, loss.data(), nullptr, nullptr, accumulate);
      cudaEmuCounters c{};
      cudaEmuGetCounters(&c);
      ops->synchronize();
      const auto d = static_cast<std::uint64_t>(depth);
      EXPECT_EQ(c.kernel_launches, (d + 2) + (accumulate ? d + 1 : 0));
      EXPECT_EQ(c.gemm_calls, 3 * d + 2);
      EXPECT_EQ(c.lt_matmuls, accumulate ? d + 1 : 2 * d + 2);
      EXPECT_EQ(c.memset_bytes, 0u) << "no bias gradient is zeroed before it is written";
      EXPECT_EQ(c.host_syncs, 0u);
    }
  }
}
#endif

}  // namespace
}  // namespace microddp::model

int main(int argc, char** argv) { return microddp::kernels::test::cuda_test_main(argc, argv); }
