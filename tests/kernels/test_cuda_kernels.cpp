// test_cuda_kernels.cpp — CudaOps and the launchers of cuda_kernels.hpp against CpuOps / the host
// functions, on fresh random inputs, with every device output poisoned (all bits 1 = NaN) first.
// Without a CUDA device it prints "no CUDA device: skipped" and exits 77, which ctest reports as
// skipped (SKIP_RETURN_CODE), so this file has its own main (the static gtest_main is then not linked
// in: the linker only pulls archive members for undefined symbols, and main is defined here).
// Also sum_squares (vs host_sum_squares), device memory through allocate_bytes / the Ops copies /
// OpsBuffer, and the out-of-memory path.
// Tolerances (u = 2^-24): stated per test; the general fp32 budget is 1e-5 relative to the inputs'
// magnitude (~170 u), which covers nvcc's FMA contraction (--fmad=true by default) and CUDA's
// expf (2 ulp) vs glibc's (1 ulp), while any indexing or formula bug shows as O(1) errors or NaN.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cuda_test_main.hpp"
#include "kernel_test_util.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda_kernels.hpp"
#include "kernels/host_reduce.hpp"
#include "kernels/launch_geometry.hpp"
#include "kernels/ops.hpp"
#include "kernels/optimizer_kernels.hpp"
#include "kernels/ops_buffer.hpp"
#include "kernels/synthetic_data.hpp"

#if defined(MICRODDP_TEST_CUDA_EMU)
#include "cuda_emu/control.h"   // the emulated cuBLASLt's refusal table (tests only)
#include "cuda_emu/counters.h"  // what the emulated device counted (tests only)
#endif

namespace microddp::kernels {
namespace {

using test::random_labels;
using test::random_normal;

constexpr double kU = 1.0 / 16777216.0;  // 2^-24

// Owning device array for the tests (the product's device buffers live in core).
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::int64_t n) : n_(n) {
    if (n_ > 0) MDDP_CUDA_CHECK(cudaMalloc(&p_, bytes()));
    poison();
    MDDP_CUDA_CHECK(cudaDeviceSynchronize());  // see below: the memset must land before other streams read
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(static_cast<std::int64_t>(host.size())) {
    if (n_ > 0) MDDP_CUDA_CHECK(cudaMemcpy(p_, host.data(), bytes(), cudaMemcpyHostToDevice));
    // A pageable-memory cudaMemcpy may return before its DMA lands, and CudaOps' stream does not
    // wait for the legacy stream: make the data visible to every stream before a test uses it.
    MDDP_CUDA_CHECK(cudaDeviceSynchronize());
  }
  ~DeviceArray() { (void)cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  // All bytes 0xFF: a NaN for float, -1 for integers, 0xFFFF (a NaN) for bf16.
  void poison() {
    if (n_ > 0) MDDP_CUDA_CHECK(cudaMemset(p_, 0xFF, bytes()));
  }
  std::vector<T> download() const {
    std::vector<T> h(static_cast<std::size_t>(n_));
    MDDP_CUDA_CHECK(cudaDeviceSynchronize());
    if (n_ > 0) MDDP_CUDA_CHECK(cudaMemcpy(h.data(), p_, bytes(), cudaMemcpyDeviceToHost));
    return h;
  }
  T* get() { return p_; }
  std::int64_t count() const { return n_; }

 private:
  std::size_t bytes() const { return static_cast<std::size_t>(n_) * sizeof(T); }
  T* p_ = nullptr;
  std::int64_t n_ = 0;
};

class CudaKernels : public ::testing::Test {
 protected:
  std::unique_ptr<Ops> gpu_ = make_cuda_ops(0, false);
  std::unique_ptr<Ops> cpu_ = make_cpu_ops(1);
  std::unique_ptr<OptimizerKernels> gpu_opt_ = make_optimizer_kernels(*gpu_);
  std::unique_ptr<OptimizerKernels> cpu_opt_ = make_optimizer_kernels(*cpu_);
};

TEST_F(CudaKernels, DescribesItself) {
  EXPECT_EQ(gpu_->device(), core::Device::Cuda);
  EXPECT_NE(gpu_->description().find("cuda:0"), std::string::npos) << gpu_->description();
  EXPECT_FALSE(gpu_->stream().is_null());
  EXPECT_THROW(make_cuda_ops(cuda_device_count(), false), core::Error);
  EXPECT_THROW(cuda_device_description(-1), core::Error);
}

// ---- GEMM: cuBLAS (row-major via the transpose trick) vs OpenBLAS -------------------------------
void gemm_case(Ops& gpu, Ops& cpu, bool tf32, std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb,
               float beta, std::uint64_t stream) {
  SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
               " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " beta=" + std::to_string(beta) +
               (tf32 ? " tf32" : ""));
  const float alpha = 0.75f;
  const auto a = random_normal(m * k, stream);
  const auto b = random_normal(k * n, stream + 1);
  const auto c0 = beta == 0.0f ? test::poisoned(m * n) : random_normal(m * n, stream + 2);
  std::vector<float> c_cpu = c0;
  cpu.gemm(ta, tb, m, n, k, alpha, a.data(), b.data(), beta, c_cpu.data());
  DeviceArray<float> da(a), db(b), dc(c0);
  gpu.gemm(ta, tb, m, n, k, alpha, da.get(), db.get(), beta, dc.get());
  gpu.synchronize();
  const auto c_gpu = dc.download();
  std::vector<double> abs_sum;
  test::gemm_ref(ta, tb, m, n, k, alpha, a.data(), b.data(), beta, c0.data(), &abs_sum);
  // Each result is within (k + 2) u sum|terms| of the exact value (Higham), so they are within twice
  // that of each other; x2 margin. TF32 (10 explicit mantissa bits) perturbs each input by up to
  // 2^-10 relative even if the hardware truncates, so each product by 2^-9: add 2^-9 sum|terms|.
  const double rel = 4.0 * static_cast<double>(k + 2) * kU + (tf32 ? std::ldexp(1.0, -9) : 0.0);
  for (std::size_t i = 0; i < c_cpu.size(); ++i) {
    ASSERT_NEAR(c_gpu[i], c_cpu[i], rel * abs_sum[i]) << "element " << i;
  }
}

TEST_F(CudaKernels, GemmMatchesOpenBlas) {
  struct Shape {
    std::int64_t m, n, k;
  };
  std::uint64_t stream = 10000;
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 5, 3}, Shape{33, 17, 65}, Shape{128, 96, 200}, Shape{3, 4, 0}}) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (float beta : {0.0f, 1.0f}) {
          gemm_case(*gpu_, *cpu_, false, s.m, s.n, s.k, ta != 0, tb != 0, beta, stream += 3);
        }
      }
    }
  }
}

TEST_F(CudaKernels, GemmTf32WithinItsPrecision) {
  auto tf32 = make_cuda_ops(0, true);
  EXPECT_NE(tf32->description().find("tf32 on"), std::string::npos);
  std::uint64_t stream = 20000;
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) gemm_case(*tf32, *cpu_, true, 256, 192, 320, ta != 0, tb != 0, 1.0f, stream += 3);
  }
}

// gemm_bf16: cublasGemmEx (bf16 tensor cores, fp32 sums) against the CPU's bf16 reference. Both
// multiply the same decoded operands exactly, so they differ by fp32 summation order only.
TEST_F(CudaKernels, GemmBf16MatchesTheCpuReference) {
  struct Shape {
    std::int64_t m, n, k;
  };
  cpu_->reserve_bf16_gemm(200 * 128);
  std::uint64_t stream = 30000;
  for (Shape s : {Shape{7, 5, 3}, Shape{128, 96, 200}, Shape{3, 4, 0}}) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        SCOPED_TRACE("m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
                     " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
        const auto a32 = random_normal(s.m * s.k, stream += 3);
        const auto b32 = random_normal(s.k * s.n, stream + 1);
        std::vector<std::uint16_t> a(a32.size()), b(b32.size());
        cpu_->encode_wire16(Wire16::BF16, a32.data(), a.data(), nullptr, s.m * s.k);
        cpu_->encode_wire16(Wire16::BF16, b32.data(), b.data(), nullptr, s.k * s.n);
        std::vector<float> a_val(a.size()), b_val(b.size());
        cpu_->decode_wire16(Wire16::BF16, a.data(), a_val.data(), s.m * s.k);
        cpu_->decode_wire16(Wire16::BF16, b.data(), b_val.data(), s.k * s.n);
        const auto c0 = random_normal(s.m * s.n, stream + 2);
        std::vector<float> c_cpu = c0;
        cpu_->gemm_bf16(ta != 0, tb != 0, s.m, s.n, s.k, 0.75f, a.data(), b.data(), 1.0f, c_cpu.data());
        DeviceArray<std::uint16_t> da(a), db(b);
        DeviceArray<float> dc(c0);
        gpu_->gemm_bf16(ta != 0, tb != 0, s.m, s.n, s.k, 0.75f, da.get(), db.get(), 1.0f, dc.get());
        gpu_->synchronize();
        const auto c_gpu = dc.download();
        std::vector<double> abs_sum;
        test::gemm_ref(ta != 0, tb != 0, s.m, s.n, s.k, 0.75f, a_val.data(), b_val.data(), 1.0f, c0.data(), &abs_sum);
        const double rel = 4.0 * static_cast<double>(s.k + 2) * kU;
        for (std::size_t i = 0; i < c_cpu.size(); ++i) ASSERT_NEAR(c_gpu[i], c_cpu[i], rel * abs_sum[i]) << i;
      }
    }
  }
}

// ---- fused GEMM + epilogue (cuBLASLt) vs the CPU's unfused reference ----------------------------
// Tolerances: the GEMM's (gemm_case above) on the sum of |terms| plus |bias| (adding the bias rounds
// once more; ReLU cannot widen a difference). On the emulated device each fused call must also BE one
// cublasLtMatmul and no kernel, or it is not the fusion it claims (the real GPU cannot count this).
struct FusedCounts {
  std::uint64_t kernels = 0, gemms = 0, lt = 0;
};
FusedCounts fused_counts_since_reset() {
  FusedCounts f;
#if defined(MICRODDP_TEST_CUDA_EMU)
  cudaEmuCounters c{};
  cudaEmuGetCounters(&c);
  f = {c.kernel_launches, c.gemm_calls, c.lt_matmuls};
#endif
  return f;
}
void reset_fused_counts() {
#if defined(MICRODDP_TEST_CUDA_EMU)
  cudaEmuResetCounters();
#endif
}
constexpr bool kCountsLaunches =
#if defined(MICRODDP_TEST_CUDA_EMU)
    true;
#else
    false;
#endif

void gemm_bias_act_case(Ops& gpu, Ops& cpu, bool tf32, bool bf16, std::int64_t m, std::int64_t n, std::int64_t k,
                        bool ta, bool tb, bool relu_on, std::uint64_t stream) {
  SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
               " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " relu=" + std::to_string(relu_on) +
               (tf32 ? " tf32" : "") + (bf16 ? " bf16" : ""));
  auto a = random_normal(m * k, stream);
  auto b = random_normal(k * n, stream + 1);
  const auto bias = random_normal(n, stream + 2);
  std::vector<std::uint16_t> a16(a.size()), b16(b.size());
  if (bf16) {  // the operands as the GPU sees them: a and b become their bf16 values
    cpu.encode_wire16(Wire16::BF16, a.data(), a16.data(), nullptr, m * k);
    cpu.encode_wire16(Wire16::BF16, b.data(), b16.data(), nullptr, k * n);
    cpu.decode_wire16(Wire16::BF16, a16.data(), a.data(), m * k);
    cpu.decode_wire16(Wire16::BF16, b16.data(), b.data(), k * n);
  }
  std::vector<float> c_cpu = test::poisoned(m * n);
  if (bf16) {
    cpu.gemm_bias_act_bf16(ta, tb, m, n, k, a16.data(), b16.data(), bias.data(), c_cpu.data(), relu_on);
  } else {
    cpu.gemm_bias_act(ta, tb, m, n, k, a.data(), b.data(), bias.data(), c_cpu.data(), relu_on);
  }
  DeviceArray<float> da(a), db(b), dbias(bias), dc(m * n);  // dc poisoned: C must not be read
  DeviceArray<std::uint16_t> da16(a16), db16(b16);
  gpu.synchronize();
  reset_fused_counts();
  if (bf16) {
    gpu.gemm_bias_act_bf16(ta, tb, m, n, k, da16.get(), db16.get(), dbias.get(), dc.get(), relu_on);
  } else {
    gpu.gemm_bias_act(ta, tb, m, n, k, da.get(), db.get(), dbias.get(), dc.get(), relu_on);
  }
  const FusedCounts counts = fused_counts_since_reset();
  gpu.synchronize();
  // Fused when every dimension exceeds 1 (a dimension of 1 is one cuBLASLt's heuristic may reject).
  if (kCountsLaunches && m > 1 && n > 1 && k > 1) {
    EXPECT_EQ(counts.lt, 1u);
    EXPECT_EQ(counts.gemms, 1u);
    EXPECT_EQ(counts.kernels, 0u) << "the bias and ReLU belong in the GEMM's epilogue";
  } else if (kCountsLaunches) {
    EXPECT_EQ(counts.lt, 0u) << "a dimension of 1 or 0 runs unfused";
  }
  const auto c_gpu = dc.download();
  std::vector<double> abs_sum;
  test::gemm_ref(ta, tb, m, n, k, 1.0, a.data(), b.data(), 0.0, test::poisoned(m * n).data(), &abs_sum);
  const double rel = 4.0 * static_cast<double>(k + 2) * kU + (tf32 ? std::ldexp(1.0, -9) : 0.0);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const std::size_t at = static_cast<std::size_t>(i * n + j);
      const double tol = rel * (abs_sum[at] + std::fabs(bias[static_cast<std::size_t>(j)]));
      ASSERT_NEAR(c_gpu[at], c_cpu[at], tol) << "element (" << i << ", " << j << ")";
    }
  }
}

TEST_F(CudaKernels, GemmBiasActMatchesTheCpuReference) {
  struct Shape {
    std::int64_t m, n, k;
  };
  auto tf32 = make_cuda_ops(0, true);
  cpu_->reserve_bf16_gemm(200 * 128);
  std::uint64_t stream = 40000;
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 5, 3}, Shape{33, 17, 65}, Shape{128, 96, 200}, Shape{3, 4, 0}}) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (const bool relu_on : {false, true}) {
          gemm_bias_act_case(*gpu_, *cpu_, false, false, s.m, s.n, s.k, ta != 0, tb != 0, relu_on, stream += 3);
          gemm_bias_act_case(*tf32, *cpu_, true, false, s.m, s.n, s.k, ta != 0, tb != 0, relu_on, stream += 3);
          gemm_bias_act_case(*gpu_, *cpu_, false, true, s.m, s.n, s.k, ta != 0, tb != 0, relu_on, stream += 3);
        }
      }
    }
  }
}

// dw = dy^T x and db = column sums of dy: overwrite is one cublasLtMatmul (BGRADB epilogue) when every
// dimension exceeds 1; accumulate is bias_grad + sgemm(beta = 1) (the epilogue cannot add). db's tolerance: a sum of `rows` terms,
// (rows + 2) u sum|dy| for each side, x2 margin (+ 2^-9 with tf32, in case the epilogue sums the
// TF32-rounded operand: the docs do not say).
TEST_F(CudaKernels, GemmBiasGradMatchesTheCpuReference) {
  struct Shape {
    std::int64_t out, in, rows;
  };
  auto tf32_ops = make_cuda_ops(0, true);
  std::uint64_t stream = 50000;
  for (Shape s : {Shape{1, 1, 1}, Shape{9, 14, 23}, Shape{96, 128, 200}, Shape{5, 3, 0}}) {
    for (const bool tf32 : {false, true}) {
      for (const bool accumulate : {false, true}) {
        SCOPED_TRACE("out=" + std::to_string(s.out) + " in=" + std::to_string(s.in) + " rows=" +
                     std::to_string(s.rows) + (tf32 ? " tf32" : "") + (accumulate ? " accumulate" : " overwrite"));
        Ops& gpu = tf32 ? *tf32_ops : *gpu_;
        const auto dy = random_normal(s.rows * s.out, stream += 4);
        const auto x = random_normal(s.rows * s.in, stream + 1);
        const auto dw0 = accumulate ? random_normal(s.out * s.in, stream + 2) : test::poisoned(s.out * s.in);
        const auto db0 = accumulate ? random_normal(s.out, stream + 3) : test::poisoned(s.out);
        std::vector<float> dw_cpu = dw0, db_cpu = db0;
        cpu_->gemm_bias_grad(s.out, s.in, s.rows, dy.data(), x.data(), dw_cpu.data(), db_cpu.data(), accumulate);
        DeviceArray<float> ddy(dy), dx(x), ddw(dw0), ddb(db0);
        gpu.synchronize();
        reset_fused_counts();
        gpu.gemm_bias_grad(s.out, s.in, s.rows, ddy.get(), dx.get(), ddw.get(), ddb.get(), accumulate);
        const FusedCounts counts = fused_counts_since_reset();
        gpu.synchronize();
        const bool fused = !accumulate && s.out > 1 && s.in > 1 && s.rows > 1;
        if (kCountsLaunches && s.rows > 0) {
          EXPECT_EQ(counts.gemms, 1u);
          EXPECT_EQ(counts.lt, fused ? 1u : 0u);
          EXPECT_EQ(counts.kernels, fused ? 0u : 1u);  // unfused: bias_grad (zeroing db first is a memset)
        }
        const auto dw_gpu = ddw.download(), db_gpu = ddb.download();
        std::vector<double> abs_sum;
        test::gemm_ref(true, false, s.out, s.in, s.rows, 1.0, dy.data(), x.data(), accumulate ? 1.0 : 0.0,
                       accumulate ? dw0.data() : test::poisoned(s.out * s.in).data(), &abs_sum);
        const double rel = 4.0 * static_cast<double>(s.rows + 2) * kU + (tf32 ? std::ldexp(1.0, -9) : 0.0);
        for (std::size_t i = 0; i < dw_cpu.size(); ++i) ASSERT_NEAR(dw_gpu[i], dw_cpu[i], rel * abs_sum[i]) << i;
        for (std::int64_t j = 0; j < s.out; ++j) {
          double sum_abs = accumulate ? std::fabs(db0[static_cast<std::size_t>(j)]) : 0.0;
          for (std::int64_t r = 0; r < s.rows; ++r) sum_abs += std::fabs(dy[static_cast<std::size_t>(r * s.out + j)]);
          ASSERT_NEAR(db_gpu[static_cast<std::size_t>(j)], db_cpu[static_cast<std::size_t>(j)], rel * sum_abs + 0.0)
              << "db " << j;
        }
      }
    }
  }
}

#if defined(MICRODDP_TEST_CUDA_EMU)
// ---- cuBLASLt may refuse a problem: the emulated library's refusal table --------------------------
// A real cuBLASLt may have no algorithm for a problem it accepts by its types (which ones depends on
// its version and the GPU). CudaOps asks the heuristic once per problem and runs the unfused calls
// where there is none; here the emulator refuses (cudaEmuSetLtRefusals) and each fused call must give
// exactly the bits of the unfused calls made by hand on the same device, with no cuBLASLt matmul.
class LtRefusals : public CudaKernels {
 protected:
  ~LtRefusals() override { (void)cudaEmuSetLtRefusals(""); }
  static cudaEmuCounters counters() {
    cudaEmuCounters c{};
    cudaEmuGetCounters(&c);
    return c;
  }
};

TEST_F(LtRefusals, ARefusedProblemRunsUnfusedWithTheUnfusedBits) {
  const std::int64_t m = 37, n = 2, k = 48;  // a two-class output layer: D's leading dimension is 2 floats
  const auto a = random_normal(m * k, 60000), b = random_normal(n * k, 60001), bias = random_normal(n, 60002);
  std::vector<std::uint16_t> a16(a.size()), b16(b.size());
  cpu_->encode_wire16(Wire16::BF16, a.data(), a16.data(), nullptr, m * k);
  cpu_->encode_wire16(Wire16::BF16, b.data(), b16.data(), nullptr, n * k);
  DeviceArray<float> da(a), db(b), dbias(bias), fused(m * n), refused(m * n), by_hand(m * n);
  DeviceArray<std::uint16_t> da16(a16), db16(b16);
  for (const char* table : {"epilogue=bias,ab=f32,ldd_bytes<16", "ab=bf16,epilogue=bias", "all"}) {
    for (const bool bf16 : {false, true}) {
      SCOPED_TRACE(std::string("table '") + table + "'" + (bf16 ? " bf16" : " fp32"));
      const bool refuses =
          std::string(table) == "all" || (bf16 == (std::string(table).find("bf16") != std::string::npos));
      auto call = [&](Ops& ops, float* c) {
        if (bf16) {
          ops.gemm_bias_act_bf16(false, true, m, n, k, da16.get(), db16.get(), dbias.get(), c, false);
        } else {
          ops.gemm_bias_act(false, true, m, n, k, da.get(), db.get(), dbias.get(), c, false);
        }
      };
      ASSERT_EQ(cudaEmuSetLtRefusals(""), 0);
      auto accepting = make_cuda_ops(0, false);
      call(*accepting, fused.get());
      accepting->synchronize();
      ASSERT_EQ(cudaEmuSetLtRefusals(table), 0);
      auto ops = make_cuda_ops(0, false);  // a fresh CudaOps: its plans are cached per object
      cudaEmuResetCounters();
      call(*ops, refused.get());
      call(*ops, refused.get());  // the second call asks nothing: the answer is cached
      ops->synchronize();
      const cudaEmuCounters c = counters();
      EXPECT_EQ(c.lt_heuristic_queries, 1u) << "one heuristic query per problem";
      EXPECT_EQ(c.lt_heuristic_empty, refuses ? 1u : 0u);
      EXPECT_EQ(c.lt_matmuls, refuses ? 0u : 2u);
      if (bf16) {
        ops->gemm_bf16(false, true, m, n, k, 1.0f, da16.get(), db16.get(), 0.0f, by_hand.get());
      } else {
        ops->gemm(false, true, m, n, k, 1.0f, da.get(), db.get(), 0.0f, by_hand.get());
      }
      ops->bias_act_forward(by_hand.get(), dbias.get(), m, n, false);
      ops->synchronize();
      const auto got = refused.download(), want = refuses ? by_hand.download() : fused.download();
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << (refuses ? "the fallback is not the unfused calls" : "an accepted problem is not the fused call");
    }
  }
}

// The weight gradient with BGRADB refused for TF32 (a combination other projects avoid): the fallback
// (zero, bias_grad, GEMM) gives the unfused bits; fp32 stays fused, with the heuristic told about the
// whole 32 MiB workspace (the library's default preference is none: no split-K for this k >> m, n).
TEST_F(LtRefusals, BiasGradientFallsBackForTheRefusedPrecisionOnly) {
  const std::int64_t out = 9, in = 14, rows = 64;
  const auto dy = random_normal(rows * out, 61000), x = random_normal(rows * in, 61001);
  DeviceArray<float> ddy(dy), dx(x), dw(out * in), dbias(out), dw_hand(out * in), db_hand(out);
  ASSERT_EQ(cudaEmuSetLtRefusals("epilogue=bgradb,compute=tf32"), 0);
  for (const bool tf32 : {false, true}) {
    SCOPED_TRACE(tf32 ? "tf32 (refused)" : "fp32 (fused)");
    auto ops = make_cuda_ops(0, tf32);
    cudaEmuResetCounters();
    ops->gemm_bias_grad(out, in, rows, ddy.get(), dx.get(), dw.get(), dbias.get(), false);
    ops->synchronize();
    const cudaEmuCounters c = counters();
    EXPECT_EQ(c.lt_heuristic_queries, 1u);
    EXPECT_EQ(c.lt_workspace_preference_bytes, 32u << 20) << "the heuristic must know the workspace it may use";
    EXPECT_EQ(c.lt_matmuls, tf32 ? 0u : 1u);
    EXPECT_EQ(c.lt_algo_matmuls, c.lt_matmuls) << "every matmul runs the heuristic's algorithm";
    ops->zero(db_hand.get(), out);
    ops->bias_grad(db_hand.get(), ddy.get(), rows, out);
    ops->gemm(true, false, out, in, rows, 1.0f, ddy.get(), dx.get(), 0.0f, dw_hand.get());
    ops->synchronize();
    if (tf32) {
      EXPECT_EQ(dw.download(), dw_hand.download());
      EXPECT_EQ(dbias.download(), db_hand.download());
    }
  }
}

// An algorithm the heuristic gave may still be refused when it runs (CUBLAS_STATUS_NOT_SUPPORTED, e.g.
// a newer library or another GPU): that problem runs unfused from then on, never an error.
TEST_F(LtRefusals, AMatmulRefusedAfterTheHeuristicAcceptedFallsBackForGood) {
  const std::int64_t m = 20, n = 12, k = 16;
  const auto a = random_normal(m * k, 62000), b = random_normal(k * n, 62001), bias = random_normal(n, 62002);
  DeviceArray<float> da(a), db(b), dbias(bias), c(m * n), by_hand(m * n);
  ASSERT_EQ(cudaEmuSetLtRefusals(""), 0);
  gpu_->gemm_bias_act(false, false, m, n, k, da.get(), db.get(), dbias.get(), c.get(), true);  // plan cached
  gpu_->synchronize();
  ASSERT_EQ(cudaEmuSetLtRefusals("all"), 0);
  cudaEmuResetCounters();
  gpu_->gemm_bias_act(false, false, m, n, k, da.get(), db.get(), dbias.get(), c.get(), true);
  ASSERT_EQ(cudaEmuSetLtRefusals(""), 0);
  gpu_->gemm_bias_act(false, false, m, n, k, da.get(), db.get(), dbias.get(), c.get(), true);
  gpu_->synchronize();
  const cudaEmuCounters cnt = counters();
  EXPECT_EQ(cnt.lt_matmuls, 0u) << "refused once: unfused from then on";
  EXPECT_EQ(cnt.lt_heuristic_queries, 0u) << "the answer stays cached";
  gpu_->gemm(false, false, m, n, k, 1.0f, da.get(), db.get(), 0.0f, by_hand.get());
  gpu_->bias_act_forward(by_hand.get(), dbias.get(), m, n, true);
  gpu_->synchronize();
  EXPECT_EQ(c.download(), by_hand.download());
}
#endif

// ---- element-wise ops: the same float operations as the CPU, so exact where no FMA can form ------
TEST_F(CudaKernels, BiasActForwardAndReluBackwardAreExact) {
  const std::int64_t rows = 301, cols = 77;  // neither a multiple of the block nor of a warp
  for (bool relu_on : {false, true}) {
    const auto y0 = random_normal(rows * cols, 30000 + relu_on);
    const auto bias = random_normal(cols, 30010 + relu_on);
    std::vector<float> y_cpu = y0;
    cpu_->bias_act_forward(y_cpu.data(), bias.data(), rows, cols, relu_on);
    DeviceArray<float> dy(y0), dbias(bias);
    gpu_->bias_act_forward(dy.get(), dbias.get(), rows, cols, relu_on);
    // Exact: one correctly rounded add and a max per element on both sides.
    EXPECT_EQ(dy.download(), y_cpu) << "relu=" << relu_on;
  }
  auto y = random_normal(rows * cols, 30020);
  for (auto& v : y) v = v > 0.0f ? v : 0.0f;
  const auto g0 = random_normal(rows * cols, 30021);
  std::vector<float> g_cpu = g0;
  cpu_->relu_backward(g_cpu.data(), y.data(), rows * cols);
  DeviceArray<float> dg(g0), dyv(y);
  gpu_->relu_backward(dg.get(), dyv.get(), rows * cols);
  EXPECT_EQ(dg.download(), g_cpu);  // exact: a select
}

TEST_F(CudaKernels, BiasGradAccumulatesDeterministically) {
  struct Shape {
    std::int64_t rows, cols;
  };
  for (const auto [rows, cols] : {Shape{1, 1}, Shape{300, 77}, Shape{4097, 33}, Shape{16, 1030}}) {
    SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
    const auto dy = random_normal(rows * cols, 31000 + static_cast<std::uint64_t>(rows));
    const auto db0 = random_normal(cols, 31100 + static_cast<std::uint64_t>(cols));
    std::vector<float> db_cpu = db0;
    cpu_->bias_grad(db_cpu.data(), dy.data(), rows, cols);
    DeviceArray<float> ddy(dy), ddb(db0), ddb2(db0);
    gpu_->bias_grad(ddb.get(), ddy.get(), rows, cols);
    gpu_->bias_grad(ddb2.get(), ddy.get(), rows, cols);
    const auto db_gpu = ddb.download();
    EXPECT_EQ(db_gpu, ddb2.download()) << "two runs must be bitwise identical";
    for (std::int64_t j = 0; j < cols; ++j) {
      double abs_sum = std::fabs(db0[j]);
      for (std::int64_t r = 0; r < rows; ++r) abs_sum += std::fabs(dy[r * cols + j]);
      // Different summation orders, each within (rows + 1) u sum|terms| of the truth (Higham): x2.
      ASSERT_NEAR(db_gpu[j], db_cpu[j], 2.0 * static_cast<double>(rows + 1) * kU * abs_sum) << j;
    }
  }
}

// ---- softmax cross-entropy -------------------------------------------------------------------------
void xent_case(Ops& gpu, Ops& cpu, const std::vector<float>& logits, const std::vector<std::int32_t>& labels,
               std::int64_t rows, std::int64_t classes, float scale) {
  SCOPED_TRACE("rows=" + std::to_string(rows) + " classes=" + std::to_string(classes));
  std::vector<float> d_cpu = test::poisoned(rows * classes);
  float loss_cpu = test::kPoison;
  cpu.softmax_xent(logits.data(), labels.data(), rows, classes, scale, d_cpu.data(), &loss_cpu);
  DeviceArray<float> dl(logits), dd(rows * classes), dloss(1), dloss2(1);
  DeviceArray<std::int32_t> dlab(labels);
  gpu.softmax_xent(dl.get(), dlab.get(), rows, classes, scale, dd.get(), dloss.get());
  gpu.softmax_xent(dl.get(), dlab.get(), rows, classes, scale, dd.get(), dloss2.get());
  gpu.synchronize();
  const auto d_gpu = dd.download();
  const float loss_gpu = dloss.download()[0];
  EXPECT_EQ(loss_gpu, dloss2.download()[0]) << "loss must be bitwise reproducible";
  // Gradient: each side is within (classes + 3) u * scale of the truth (see test_cpu_ops.cpp), plus
  // 2 ulp for CUDA's expf: (classes + 5) u * scale each, x2 for the difference, x2 margin.
  const double tol_d = 4.0 * static_cast<double>(classes + 5) * kU * scale;
  for (std::size_t i = 0; i < d_cpu.size(); ++i) ASSERT_NEAR(d_gpu[i], d_cpu[i], tol_d) << "dlogits[" << i << "]";
  // Loss: per row (classes + 5) u (1 + |row loss|) on each side; summed and scaled, x2 x2.
  const double tol_l = 4.0 * static_cast<double>(classes + 5) * kU *
                       (static_cast<double>(scale) * static_cast<double>(rows) + std::fabs(loss_cpu));
  EXPECT_NEAR(loss_gpu, loss_cpu, tol_l);
}

TEST_F(CudaKernels, SoftmaxXentMatchesCpu) {
  // classes 1, 10, 33 (> one warp: lanes stride), 1000; rows up to past the block cap (8 * 1024).
  for (std::int64_t classes : {1, 10, 33, 1000}) {
    for (std::int64_t rows : {1, 9, 1000}) {
      xent_case(*gpu_, *cpu_, random_normal(rows * classes, 40000 + classes * 7 + rows, 3.0f),
                random_labels(rows, classes, 41000 + classes + rows), rows, classes, 1.0f / 1024.0f);
    }
  }
  xent_case(*gpu_, *cpu_, random_normal(9000 * 10, 42000, 3.0f), random_labels(9000, 10, 42001), 9000, 10,
            1.0f / 9000.0f);
}

TEST_F(CudaKernels, SoftmaxXentLargeLogits) {
  const std::vector<float> logits = {1e4f, 9999.0f, -1e4f, 0.0f, 1e4f,  9999.0f, -1e4f, 0.0f,
                                     1e4f, 1e4f,    1e4f,  1e4f, -3.5f, 1e4f,    -1e4f, 42.0f};
  xent_case(*gpu_, *cpu_, logits, {0, 2, 3, 1}, 4, 4, 0.25f);
}

TEST_F(CudaKernels, SoftmaxXentBadLabelIsReportedAtSynchronize) {
  const std::vector<float> logits = random_normal(6, 43000);
  DeviceArray<float> dl(logits), dd(6), dloss(1);
  DeviceArray<std::int32_t> dlab(std::vector<std::int32_t>{1, 3});  // 3 is out of [0, 3)
  gpu_->softmax_xent(dl.get(), dlab.get(), 2, 3, 0.5f, dd.get(), dloss.get());
  EXPECT_THROW(gpu_->synchronize(), core::Error);
  EXPECT_TRUE(std::isnan(dloss.download()[0]));
  gpu_->synchronize();  // the flag was reset: the next synchronize is clean
  // Empty batch: the loss is still overwritten (with 0).
  DeviceArray<float> dloss0(1);
  gpu_->softmax_xent(dl.get(), dlab.get(), 0, 3, 0.5f, dd.get(), dloss0.get());
  gpu_->synchronize();
  EXPECT_EQ(dloss0.download()[0], 0.0f);
}

// ---- optimizers ------------------------------------------------------------------------------------
TEST_F(CudaKernels, AdamAndSgdMatchCpu) {
  const std::int64_t n = 100003;
  const auto g = random_normal(n, 50000);
  const auto p0 = random_normal(n, 50001);
  const auto m0 = random_normal(n, 50002, 0.1f);
  auto v0 = random_normal(n, 50003, 0.1f);
  for (auto& x : v0) x = x * x;  // second moments are >= 0
  for (bool decoupled : {false, true}) {
    AdamParams a;
    a.lr = 0.01f;
    a.weight_decay = 0.05f;
    a.decoupled = decoupled;
    a.bias_correction1 = 0.271f;
    a.bias_correction2 = 0.002997001f;
    std::vector<float> p = p0, m = m0, v = v0;
    cpu_opt_->adam_step(a, p.data(), g.data(), m.data(), v.data(), n, nullptr);
    DeviceArray<float> dp(p0), dg(g), dm(m0), dv(v0);
    // The bf16 copy of the updated weights (--precision bf16), made in the same pass: exactly the
    // rounding of the GPU's own result.
    DeviceArray<std::uint16_t> dpb(std::vector<std::uint16_t>(static_cast<std::size_t>(n), 0xFFFF));
    gpu_opt_->adam_step(a, dp.get(), dg.get(), dm.get(), dv.get(), n, dpb.get());
    const auto pg = dp.download(), mg = dm.download(), vg = dv.download();
    const auto pbg = dpb.download();
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(pbg[i], float_to_bf16_bits(pg[i])) << i;
      // 1e-5 relative to the magnitudes that enter each update (see the file comment).
      ASSERT_NEAR(mg[i], m[i], 1e-5 * (std::fabs(m0[i]) + std::fabs(g[i]) + std::fabs(p0[i]))) << i;
      ASSERT_NEAR(vg[i], v[i],
                  1e-5 * (v0[i] + (std::fabs(g[i]) + std::fabs(p0[i])) * (std::fabs(g[i]) + std::fabs(p0[i]))))
          << i;
      ASSERT_NEAR(pg[i], p[i], 1e-5 * (std::fabs(p0[i]) + std::fabs(p[i] - p0[i]))) << i;
    }
  }
  for (int variant = 0; variant < 3; ++variant) {  // plain, momentum, nesterov
    SgdParams s;
    s.lr = 0.1f;
    s.weight_decay = 0.01f;
    s.momentum = variant == 0 ? 0.0f : 0.9f;
    s.nesterov = variant == 2;
    std::vector<float> p = p0, buf = m0;
    cpu_opt_->sgd_step(s, p.data(), g.data(), variant == 0 ? nullptr : buf.data(), n, nullptr);
    DeviceArray<float> dp(p0), dg(g), dbuf(m0);
    DeviceArray<std::uint16_t> dpb(std::vector<std::uint16_t>(static_cast<std::size_t>(n), 0xFFFF));
    gpu_opt_->sgd_step(s, dp.get(), dg.get(), variant == 0 ? nullptr : dbuf.get(), n, dpb.get());
    const auto pg = dp.download(), bg = dbuf.download();
    const auto pbg = dpb.download();
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(pbg[i], float_to_bf16_bits(pg[i])) << "variant " << variant << " " << i;
      const double mag = std::fabs(p0[i]) + std::fabs(g[i]) + std::fabs(m0[i]);
      ASSERT_NEAR(pg[i], p[i], 1e-5 * mag) << "variant " << variant << " " << i;
      if (variant != 0) {
        ASSERT_NEAR(bg[i], buf[i], 1e-5 * mag) << "variant " << variant << " " << i;
      }
    }
  }
}

// ---- scale / zero / copy (also past the grid-stride cap: 20M > 65536 blocks x 256 threads) --------
TEST_F(CudaKernels, ScaleZeroCopy) {
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{20'000'000}}) {
    const auto x0 = random_normal(n, 60000 + static_cast<std::uint64_t>(n % 1000));
    DeviceArray<float> dx(x0), dz(n), dc(n);
    gpu_->scale(dx.get(), -0.5f, n);
    gpu_->zero(dz.get(), n);
    gpu_->copy(dc.get(), dx.get(), n);
    gpu_->synchronize();
    const auto x = dx.download(), z = dz.download(), c = dc.download();
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(x[i], -0.5f * x0[i]) << i;  // exact: power-of-two factor
      ASSERT_EQ(z[i], 0.0f) << i;
      ASSERT_EQ(c[i], x[i]) << i;
    }
  }
}

// ---- launchers used outside Ops: element-wise reduce (GPU ring) and bf16 conversion ----------------
TEST_F(CudaKernels, ReduceMatchesHostReduceExactly) {
  const std::int64_t n = 70001;
  const auto a = random_normal(n, 70000), b = random_normal(n, 70001);
  for (core::ReduceOp op : {core::ReduceOp::Sum, core::ReduceOp::Max, core::ReduceOp::Min, core::ReduceOp::Mean}) {
    std::vector<float> want(static_cast<std::size_t>(n));
    host_reduce(core::TensorView::of(want.data(), n), core::TensorView::of(const_cast<float*>(a.data()), n),
                core::TensorView::of(const_cast<float*>(b.data()), n), op);
    DeviceArray<float> da(a), db(b), dd(n);
    gpu::reduce(dd.get(), da.get(), db.get(), n, op, nullptr);
    EXPECT_EQ(dd.download(), want) << core::reduce_op_name(op);  // exact: one add / compare per element
    gpu::reduce(da.get(), da.get(), db.get(), n, op, nullptr);   // in place (dst aliases a)
    EXPECT_EQ(da.download(), want) << core::reduce_op_name(op) << " in place";
  }
}

TEST_F(CudaKernels, Bf16ConversionMatchesHostFunctionsBitwise) {
  auto x = random_normal(100000, 80000, 100.0f);
  x[0] = 0.0f;
  x[1] = -0.0f;
  x[2] = std::numeric_limits<float>::max();
  x[3] = std::numeric_limits<float>::infinity();
  x[4] = std::numeric_limits<float>::quiet_NaN();
  x[5] = float_from_bits(0x3F808000u);  // a tie
  const auto n = static_cast<std::int64_t>(x.size());
  DeviceArray<float> dx(x), back(n);
  DeviceArray<std::uint16_t> dbf(n);
  gpu::f32_to_bf16(dbf.get(), dx.get(), n, nullptr);
  gpu::bf16_to_f32(back.get(), dbf.get(), n, nullptr);
  const auto bf = dbf.download();
  const auto f = back.download();
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(bf[i], float_to_bf16_bits(x[i])) << i;  // the same function on both sides: bitwise
    const float want = bf16_bits_to_float(bf[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f[i])) << i;
    } else {
      ASSERT_EQ(f[i], want) << i;
    }
  }
}

// Gradient compression's kernels: axpy and the 16-bit wire encode (with and without residual, in
// place) / decode against CpuOps, which runs the same per-element functions: bitwise.
TEST_F(CudaKernels, Wire16AndAxpyMatchCpuBitwise) {
  auto x = random_normal(100003, 81000, 1000.0f);
  x[0] = 70000.0f;  // beyond fp16's range: inf in fp16, finite in bf16
  x[1] = std::ldexp(1.0f, -25);
  x[2] = std::numeric_limits<float>::quiet_NaN();
  const auto n = static_cast<std::int64_t>(x.size());
  const auto y0 = random_normal(n, 81001);
  for (Wire16 f : {Wire16::F16, Wire16::BF16}) {
    std::vector<float> res_cpu = x, dec_cpu(x.size());
    std::vector<std::uint16_t> w_cpu(x.size()), w2_cpu(x.size());
    cpu_->encode_wire16(f, x.data(), w2_cpu.data(), nullptr, n);
    cpu_->encode_wire16(f, res_cpu.data(), w_cpu.data(), res_cpu.data(), n);  // residual in place
    cpu_->decode_wire16(f, w_cpu.data(), dec_cpu.data(), n);
    EXPECT_EQ(w_cpu, w2_cpu);
    DeviceArray<float> dres(x), ddec(n);
    DeviceArray<std::uint16_t> dw(n);
    gpu_->encode_wire16(f, dres.get(), dw.get(), dres.get(), n);
    gpu_->decode_wire16(f, dw.get(), ddec.get(), n);
    gpu_->synchronize();
    EXPECT_EQ(dw.download(), w_cpu);
    const auto res = dres.download(), dec = ddec.download();
    for (std::int64_t i = 0; i < n; ++i) {
      if (std::isnan(res_cpu[i])) {
        ASSERT_TRUE(std::isnan(res[i])) << i;
      } else {
        ASSERT_EQ(res[i], res_cpu[i]) << i;
      }
      if (!std::isnan(dec_cpu[i])) {  // braces: ASSERT_* is an if/else of its own (-Wdangling-else)
        ASSERT_EQ(dec[i], dec_cpu[i]) << i;
      }
    }
  }
  std::vector<float> y_cpu = y0;
  cpu_->axpy(-0.75f, x.data() + 3, y_cpu.data() + 3, n - 3);
  DeviceArray<float> dx(x), dy(y0);
  gpu_->axpy(-0.75f, dx.get() + 3, dy.get() + 3, n - 3);
  // A GPU may fuse y + a*x into one FMA (one rounding instead of two): within one unit in the last
  // place of the terms' magnitude, not bitwise.
  const auto y = dy.download();
  for (std::int64_t i = 0; i < n; ++i) {
    const double scale = std::abs(static_cast<double>(y0[i])) + std::abs(0.75 * static_cast<double>(x[i]));
    if (i >= 3) {
      ASSERT_NEAR(y[i], y_cpu[i], 2.4e-7 * scale) << i;
    }
  }
}

// ---- sum_squares: two-pass deterministic reduction vs the host algorithm ------------------------
// Both sides add exact double squares (a float's square needs 48 of double's 53 bits) of one sign, in
// different orders; each is within (longest chain) * 2^-53 relative of the truth: the host's 8 lanes
// have n / 8 terms, so up to 1.5e-11 at n = 2^20 in the worst case; on normal data the host is off by
// ~9e-14 and the GPU's short chains by ~1.5e-15 (a CPU emulation of both orders, n = 2^20 + 3), hence
// 1e-12 (10x that). A dropped or doubled element is ~1e-6 relative at n = 2^20.
constexpr double kSumSquaresRel = 1e-12;

TEST_F(CudaKernels, SumSquaresMatchesHostAndRepeatsBitwise) {
  // 0; 1; 1000 (4 blocks, partial last block); 2^20 + 3 (1024 blocks, each thread strides 4 times,
  // ragged end).
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{1000}, (std::int64_t{1} << 20) + 3}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const auto x = random_normal(n, 90000 + static_cast<std::uint64_t>(n % 1000), 3.0f);
    const double want = host_sum_squares(x.data(), n);
    DeviceArray<float> dx(x);
    const double got = gpu_->sum_squares(dx.get(), n);
    const double again = gpu_->sum_squares(dx.get(), n);
    EXPECT_EQ(got, again) << "two runs must be bitwise identical";
    if (n <= 1) {
      EXPECT_EQ(got, want);  // no addition of two non-zero terms: exact on both sides
    } else {
      EXPECT_NEAR(got, want, kSumSquaresRel * want);
    }
  }
}

TEST_F(CudaKernels, SumSquaresLauncherWritesOnlyWhatItReads) {
  // Workspace and output poisoned (NaN): reading a partial that pass 1 did not write, or not
  // writing *out (n == 0 included), shows as NaN.
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{1000}, std::int64_t{300000}}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const auto x = random_normal(n, 91000 + static_cast<std::uint64_t>(n % 1000));
    DeviceArray<float> dx(x);
    DeviceArray<double> partials(static_cast<std::int64_t>(gpu::sum_squares_workspace_bytes() / sizeof(double)));
    DeviceArray<double> out(1);
    ASSERT_GE(partials.count(), std::int64_t{gpu::kSumSquaresMaxBlocks});
    gpu::sum_squares(dx.get(), n, partials.get(), out.get(), nullptr);
    const double got = out.download()[0];
    const double want = host_sum_squares(x.data(), n);
    if (n == 0) {
      EXPECT_EQ(got, 0.0);
    } else {
      EXPECT_NEAR(got, want, kSumSquaresRel * want);
    }
  }
  EXPECT_THROW(gpu::sum_squares(nullptr, -1, nullptr, nullptr, nullptr), core::Error);
  DeviceArray<double> out(1);
  EXPECT_THROW(gpu::sum_squares(nullptr, 5, nullptr, out.get(), nullptr), core::Error);  // no workspace
}

TEST_F(CudaKernels, SumSquaresIsNonFiniteExactlyWhenAnInputIs) {
  const std::int64_t n = (std::int64_t{1} << 20) + 3;
  auto x = random_normal(n, 92000);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // First element, one in the middle of a stride, the last (in the ragged final stride).
  for (std::int64_t pos : {std::int64_t{0}, n / 2 + 17, n - 1}) {
    SCOPED_TRACE("pos=" + std::to_string(pos));
    const float keep = x[pos];
    x[pos] = nan;
    {
      DeviceArray<float> dx(x);
      EXPECT_TRUE(std::isnan(gpu_->sum_squares(dx.get(), n)));
    }
    x[pos] = -inf;
    {
      DeviceArray<float> dx(x);
      EXPECT_EQ(gpu_->sum_squares(dx.get(), n), std::numeric_limits<double>::infinity());
    }
    x[pos] = keep;
  }
  // Huge finite floats: squares up to FLT_MAX^2 = 1.2e77 overflow float, not double.
  std::vector<float> big(100000, 1e30f);
  big[5] = -std::numeric_limits<float>::max();
  DeviceArray<float> dbig(big);
  const double got = gpu_->sum_squares(dbig.get(), static_cast<std::int64_t>(big.size()));
  EXPECT_TRUE(std::isfinite(got));
  EXPECT_NEAR(got, host_sum_squares(big.data(), static_cast<std::int64_t>(big.size())), kSumSquaresRel * got);
}

// ---- device memory through the Ops: allocate_bytes / copies / OpsBuffer ----------------------------
TEST_F(CudaKernels, OpsBufferAllocatesZeroedMemoryAndCopiesRanges) {
  const std::int64_t n = 300001;
  const auto x = random_normal(n, 93000);
  {
    // Dirty memory of the same size and give it back, so the zero-fill below is tested on memory
    // that is likely to be handed out again rather than only on fresh pages.
    OpsBuffer<float> dirty(*gpu_, n);
    dirty.from_host(x.data(), 0, n);
  }
  OpsBuffer<float> buf(*gpu_, n);
  EXPECT_EQ(buf.device(), core::Device::Cuda);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buf.data()) % 64, 0u);
  std::vector<float> back = test::poisoned(n);
  buf.to_host(back.data(), 0, n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(back[i], 0.0f) << "zero-filled, element " << i;
  buf.from_host(x.data(), 0, n);
  back = test::poisoned(n);
  buf.to_host(back.data(), 0, n);
  EXPECT_EQ(back, x);
  // A sub-range in the middle, then read back a range that straddles it.
  const std::vector<float> ones(1000, 1.0f);
  buf.from_host(ones.data(), 5000, 1000);
  std::vector<float> part = test::poisoned(3000);
  buf.to_host(part.data(), 4000, 3000);
  for (std::int64_t i = 0; i < 3000; ++i) {
    const std::int64_t j = 4000 + i;
    ASSERT_EQ(part[i], (j >= 5000 && j < 6000) ? 1.0f : x[j]) << j;
  }
  // The buffer is usable by the ops on their stream, and copies are ordered after them.
  gpu_->scale(buf.data(), 2.0f, n);
  buf.to_host(back.data(), 0, n);
  for (std::int64_t i = 0; i < n; ++i) {
    const float want = 2.0f * ((i >= 5000 && i < 6000) ? 1.0f : x[i]);  // exact: power-of-two factor
    ASSERT_EQ(back[i], want) << i;
  }
  EXPECT_EQ(gpu_->allocate_bytes(0), nullptr);
  gpu_->free_bytes(nullptr);
  gpu_->copy_from_host(nullptr, nullptr, 0);
  gpu_->copy_to_host(nullptr, nullptr, 0);
  OpsBuffer<double> empty(*gpu_, 0);
  EXPECT_EQ(empty.data(), nullptr);
}

// The input pipeline's upload (ops.hpp upload_async / wait_for_upload): the copy runs on the copy
// stream, the compute stream waits for its event on the device, the host waits for nothing until
// the synchronize. The compute stream's scale must see the uploaded bytes (the emulated device runs
// streams on worker threads, so a missing wait shows as stale data), and on the CPU the upload is a
// plain copy.
TEST_F(CudaKernels, UploadOnTheCopyStreamOrdersTheComputeStreamWithoutAHostWait) {
  const std::int64_t n = 200003;
  const auto x = random_normal(n, 94000);
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  auto* pinned = static_cast<float*>(gpu_->allocate_host_bytes(bytes));
  std::copy(x.begin(), x.end(), pinned);
  OpsBuffer<float> dst(*gpu_, n);
#if defined(MICRODDP_TEST_CUDA_EMU)
  cudaEmuResetCounters();
#endif
  gpu_->upload_async(3, dst.data(), pinned, bytes);
  gpu_->wait_for_upload(3);
  gpu_->scale(dst.data(), 2.0f, n);
#if defined(MICRODDP_TEST_CUDA_EMU)
  cudaEmuCounters c{};
  cudaEmuGetCounters(&c);
  EXPECT_EQ(c.host_syncs, 0u) << "upload_async / wait_for_upload must not block the host";
  EXPECT_EQ(c.stream_event_waits, 1u) << "the compute stream waits on the upload event";
  EXPECT_EQ(c.h2d_pinned_bytes, bytes);
#endif
  gpu_->synchronize();
  std::vector<float> back = test::poisoned(n);
  dst.to_host(back.data(), 0, n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(back[i], 2.0f * x[i]) << i;  // exact: power-of-two factor
  gpu_->free_host_bytes(pinned);
  EXPECT_THROW(gpu_->upload_async(Ops::kUploadSlots, dst.data(), x.data(), 0), core::Error);
  EXPECT_THROW(gpu_->wait_for_upload(-1), core::Error);
  // CPU: a plain copy, nothing to wait for.
  std::vector<float> host_dst(static_cast<std::size_t>(n), 0.0f);
  cpu_->upload_async(0, host_dst.data(), x.data(), bytes);
  cpu_->wait_for_upload(0);
  EXPECT_EQ(host_dst, x);
}

TEST_F(CudaKernels, AllocateBytesOutOfMemoryThrowsAndLeavesNoStaleError) {
  const std::size_t huge = std::size_t{1} << 60;  // 1 EiB: no GPU has it
  try {
    (void)gpu_->allocate_bytes(huge);
    FAIL() << "allocate_bytes(2^60) returned";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(huge)), std::string::npos) << e.what();
  }
  // The failed cudaMalloc must not be reported again by the next launch check.
  DeviceArray<float> dx(std::vector<float>(100, 3.0f));
  EXPECT_NO_THROW(gpu_->scale(dx.get(), 0.5f, 100));
  EXPECT_EQ(gpu_->sum_squares(dx.get(), 100), 100 * 1.5 * 1.5);  // exact: small binary fractions
}

TEST_F(CudaKernels, CopyToHostReportsDeviceFlaggedErrorsLikeSynchronize) {
  const std::vector<float> logits = random_normal(6, 94000);
  DeviceArray<float> dl(logits), dd(6), dloss(1);
  DeviceArray<std::int32_t> dlab(std::vector<std::int32_t>{1, 3});  // 3 is out of [0, 3)
  gpu_->softmax_xent(dl.get(), dlab.get(), 2, 3, 0.5f, dd.get(), dloss.get());
  float loss = 0.0f;
  EXPECT_THROW(gpu_->copy_to_host(&loss, dloss.get(), sizeof(float)), core::Error);
  EXPECT_TRUE(std::isnan(loss)) << "the bytes were still copied";
  gpu_->synchronize();  // reported once: the flag was reset
}

// ---- synthetic rows: the kernels make the CPU's rows, bit for bit -------------------------------
// Sizes around the kernels' tiles (32 samples per block, 8 warps of classes: classes > 8 give a warp
// two classes, classes < 8 leave warps idle), count 0, odd shapes, counters crossing 2^32.
TEST_F(CudaKernels, SyntheticRowsAreTheCpuRowsBitForBit) {
  struct Case {
    std::int64_t first, count, in_dim, classes;
  };
  const Case cases[] = {{0, 0, 8, 3},        {0, 1, 1, 2},  {5, 17, 7, 3},  {1000, 33, 64, 10},
                        {3, 70, 5, 17},      {0, 64, 3, 8}, {0, 40, 4, 20}, {(1ll << 32) / 9, 21, 9, 4},
                        {12345, 300, 100, 7}};
  for (const Case& c : cases) {
    SCOPED_TRACE("first " + std::to_string(c.first) + " count " + std::to_string(c.count) + " in_dim " +
                 std::to_string(c.in_dim) + " classes " + std::to_string(c.classes));
    const auto teacher = random_normal(c.classes * c.in_dim, 300 + static_cast<std::uint64_t>(c.in_dim));
    SyntheticSpec spec{99, 0xFEA7u + (1ull << 33), c.in_dim, c.classes, teacher.data()};
    std::vector<float> x_cpu(static_cast<std::size_t>(c.count * c.in_dim));
    std::vector<std::int32_t> y_cpu(static_cast<std::size_t>(c.count));
    cpu_->synthetic_rows(spec, c.first, c.count, x_cpu.data(), y_cpu.data());
    DeviceArray<float> d_teacher(teacher);
    DeviceArray<float> dx(c.count * c.in_dim + 1);  // poisoned (NaN), one guard element
    DeviceArray<std::int32_t> dy(c.count + 1);      // poisoned (-1)
    spec.teacher = d_teacher.get();
    gpu_->synthetic_rows(spec, c.first, c.count, dx.get(), dy.get());
    gpu_->synchronize();
    const auto x_gpu = dx.download();
    const auto y_gpu = dy.download();
    for (std::size_t e = 0; e < x_cpu.size(); ++e) {
      ASSERT_EQ(float_bits(x_gpu[e]), float_bits(x_cpu[e]))
          << "x element " << e << ": " << x_gpu[e] << " vs " << x_cpu[e];
    }
    for (std::size_t s = 0; s < y_cpu.size(); ++s) ASSERT_EQ(y_gpu[s], y_cpu[s]) << "label " << s;
    EXPECT_TRUE(std::isnan(x_gpu.back())) << "wrote past x";
    EXPECT_EQ(y_gpu.back(), -1) << "wrote past y";
  }
}

TEST_F(CudaKernels, LaunchersRejectBadArguments) {
  EXPECT_THROW(gpu::scale(nullptr, 1.0f, -1, nullptr), core::Error);
  EXPECT_THROW(gpu::bias_grad(nullptr, nullptr, -1, 3, nullptr), core::Error);
  EXPECT_THROW(gpu::softmax_xent(nullptr, nullptr, 1, 0, 1.0f, nullptr, nullptr, {}, nullptr), core::Error);
  SgdParams s;
  s.momentum = 0.9f;
  EXPECT_THROW(gpu::sgd_step(s, nullptr, nullptr, nullptr, 5, nullptr, nullptr), core::Error);
  gpu::scale(nullptr, 1.0f, 0, nullptr);  // n = 0: no launch, no error
  const SyntheticSpec no_teacher{1, 2, 10, 3, nullptr};
  EXPECT_THROW(gpu::synthetic_rows(no_teacher, 0, 1, nullptr, nullptr, nullptr), core::Error);
  EXPECT_THROW(gpu::synthetic_rows(no_teacher, 0, -1, nullptr, nullptr, nullptr), core::Error);
  gpu::synthetic_rows(no_teacher, 5, 0, nullptr, nullptr, nullptr);  // count = 0: no launch, no error
}

}  // namespace
}  // namespace microddp::kernels

int main(int argc, char** argv) { return microddp::kernels::test::cuda_test_main(argc, argv); }
