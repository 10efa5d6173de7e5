// test_cublas.cpp — the emulated cublasSgemm keeps cuBLAS's column-major contract: every transpose
// combination, odd shapes and leading dimensions larger than the rows, against a float64
// reference computed here from the column-major definition; beta = 0 does not read C; k = 0;
// TF32 math rounds A and B (to nearest, ties away) before an fp32 product; operands must be device
// memory; the GEMM runs on the handle's stream.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "emu_test_util.hpp"

namespace cuda_emu::test {
namespace {

float bits_to_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Column-major element (i, j) of op(X), X stored with leading dimension ld.
double at(const std::vector<float>& x, bool trans, int ld, int i, int j) {
  return trans ? x[static_cast<std::size_t>(i) * ld + j] : x[static_cast<std::size_t>(j) * ld + i];
}

struct Case {
  int m, n, k;
  bool ta, tb;
  float beta;
};

class Cublas : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasCreate(&handle_)); }
  void TearDown() override { EXPECT_EQ(CUBLAS_STATUS_SUCCESS, cublasDestroy(handle_)); }

  // Runs one GEMM with ld = stored rows + pad; returns C and the float64 reference (and sum |terms|).
  void run(const Case& c, int pad, std::vector<float>& got, std::vector<double>& want, std::vector<double>& mag,
           bool round_inputs_tf32 = false) {
    std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.n * 17 + c.k * 7 + c.ta * 2 + c.tb));
    std::normal_distribution<float> normal;
    const int a_rows = c.ta ? c.k : c.m, a_cols = c.ta ? c.m : c.k;
    const int b_rows = c.tb ? c.n : c.k, b_cols = c.tb ? c.k : c.n;
    // cuBLAS wants ld >= max(1, stored rows), also for an empty operand.
    const int lda = std::max(a_rows, 1) + pad, ldb = std::max(b_rows, 1) + pad, ldc = std::max(c.m, 1) + pad;
    std::vector<float> a(static_cast<std::size_t>(lda) * a_cols), b(static_cast<std::size_t>(ldb) * b_cols);
    std::vector<float> c0(static_cast<std::size_t>(ldc) * c.n);
    for (float& v : a) v = normal(rng);
    for (float& v : b) v = normal(rng);
    for (float& v : c0) v = c.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : normal(rng);
    DeviceBuffer<float> da(a.size()), db(b.size()), dc(c0.size());
    da.upload(a);
    db.upload(b);
    dc.upload(c0);
    const float alpha = 0.75f;
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS,
              cublasSgemm(handle_, c.ta ? CUBLAS_OP_T : CUBLAS_OP_N, c.tb ? CUBLAS_OP_T : CUBLAS_OP_N, c.m, c.n, c.k,
                          &alpha, da.get(), lda, db.get(), ldb, &c.beta, dc.get(), ldc));
    got = dc.download();
    if (round_inputs_tf32) {
      for (float& v : a) v = tf32(v);
      for (float& v : b) v = tf32(v);
    }
    want.assign(got.size(), 0.0);
    mag.assign(got.size(), 0.0);
    for (int j = 0; j < c.n; ++j) {
      for (int i = 0; i < c.m; ++i) {
        double s = 0.0, m = 0.0;
        for (int p = 0; p < c.k; ++p) {
          const double t = at(a, c.ta, lda, i, p) * at(b, c.tb, ldb, p, j);
          s += t;
          m += std::fabs(t);
        }
        const std::size_t idx = static_cast<std::size_t>(j) * ldc + i;
        want[idx] = alpha * s + (c.beta == 0.0f ? 0.0 : c.beta * static_cast<double>(c0[idx]));
        mag[idx] = std::fabs(alpha) * m + (c.beta == 0.0f ? 0.0 : std::fabs(c.beta * static_cast<double>(c0[idx])));
      }
    }
  }

  // TF32 as the emulator documents it, written independently: nearest, ties away from zero.
  static float tf32(float x) {
    if (!std::isfinite(x)) return x;
    int e = 0;
    const double mant = std::frexp(static_cast<double>(x), &e);  // |mant| in [0.5, 1)
    const double scaled = std::ldexp(mant, 11);                  // 11 bits: the implicit one + 10
    const double r = std::copysign(std::floor(std::fabs(scaled) + 0.5), scaled);
    return static_cast<float>(std::ldexp(r, e - 11));
  }

  cublasHandle_t handle_ = nullptr;
};

TEST_F(Cublas, SgemmIsColumnMajorForEveryTransposeAndOddShapes) {
  for (const Case c : {Case{1, 1, 1, false, false, 0.0f}, Case{7, 5, 3, false, false, 1.0f},
                       Case{33, 17, 65, false, false, 0.0f}, Case{5, 9, 2, false, false, -0.5f}}) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (int pad : {0, 3}) {
          Case cc = c;
          cc.ta = ta != 0;
          cc.tb = tb != 0;
          SCOPED_TRACE(::testing::Message() << "m=" << cc.m << " n=" << cc.n << " k=" << cc.k << " ta=" << ta
                                            << " tb=" << tb << " beta=" << cc.beta << " pad=" << pad);
          std::vector<float> got;
          std::vector<double> want, mag;
          run(cc, pad, got, want, mag);
          const int ldc = cc.m + pad;
          for (int j = 0; j < cc.n; ++j) {
            for (int i = 0; i < cc.m; ++i) {
              const std::size_t idx = static_cast<std::size_t>(j) * ldc + i;
              // fp32 products summed in some order: within (k + 2) u sum|terms| of the exact value.
              ASSERT_NEAR(got[idx], want[idx], (cc.k + 2) * std::ldexp(1.0, -24) * mag[idx] + 1e-30) << i << "," << j;
            }
            for (int i = cc.m; i < ldc; ++i) {
              const std::size_t idx = static_cast<std::size_t>(j) * ldc + i;
              if (cc.beta == 0.0f) {
                ASSERT_TRUE(std::isnan(got[idx])) << "padding rows are not written";
              }
            }
          }
        }
      }
    }
  }
}

TEST_F(Cublas, KZeroScalesCAndBetaZeroDoesNotReadIt) {
  std::vector<float> got;
  std::vector<double> want, mag;
  run(Case{4, 3, 0, false, false, 0.0f}, 0, got, want, mag);
  for (float v : got) EXPECT_EQ(v, 0.0f);
  run(Case{4, 3, 0, true, false, 2.0f}, 0, got, want, mag);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<float>(want[i]));
}

TEST_F(Cublas, Tf32RoundsTheInputsToTenMantissaBits) {
  EXPECT_EQ(tf32(bits_to_float(0x3F800000u + (1u << 12))), 1.0f + std::ldexp(1.0f, -10)) << "a tie rounds away";
  EXPECT_EQ(tf32(bits_to_float(0x3F800000u + (1u << 12) - 1)), 1.0f);
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasSetMathMode(handle_, CUBLAS_TF32_TENSOR_OP_MATH));
  cublasMath_t mode{};
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasGetMathMode(handle_, &mode));
  EXPECT_EQ(mode, CUBLAS_TF32_TENSOR_OP_MATH);
  const Case c{64, 48, 96, false, true, 1.0f};
  std::vector<float> got, got_fp32;
  std::vector<double> want_tf32, want, mag;
  run(c, 0, got, want_tf32, mag, /*round_inputs_tf32=*/true);
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
  run(c, 0, got_fp32, want, mag);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    // Against the product of the rounded inputs: fp32 accuracy.
    ASSERT_NEAR(got[i], want_tf32[i], (c.k + 2) * std::ldexp(1.0, -24) * mag[i]) << i;
    // Against the exact inputs: TF32 accuracy (each input within 2^-11 relative).
    ASSERT_NEAR(got[i], want[i], std::ldexp(1.0, -9) * mag[i]) << i;
    differ += got[i] != got_fp32[i];
  }
  EXPECT_GT(differ, got.size() / 2) << "TF32 must change most results";
}

// cublasGemmEx with bf16 operands: the products of the decoded operands summed in fp32; other type
// combinations are refused as unsupported, not computed some other way.
TEST_F(Cublas, GemmExBf16MultipliesTheDecodedOperandsInFp32) {
  const int m = 5, n = 3, k = 7;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  // bf16 bit patterns of random values; their float values by widening (independently of the emulator).
  std::vector<std::uint16_t> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(k) * n);
  for (auto& h : a) h = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(normal(rng)) >> 16);
  for (auto& h : b) h = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(normal(rng)) >> 16);
  const auto value = [](std::uint16_t h) { return static_cast<double>(bits_to_float(static_cast<std::uint32_t>(h) << 16)); };
  DeviceBuffer<std::uint16_t> da(a.size()), db(b.size());
  DeviceBuffer<float> dc(static_cast<std::size_t>(m) * n);
  da.upload(a);
  db.upload(b);
  const float alpha = 1.0f, beta = 0.0f;
  // Column-major: A (m, k) with lda m; B transposed: stored (n, k) with ldb n.
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, da.get(),
                                                CUDA_R_16BF, m, db.get(), CUDA_R_16BF, n, &beta, dc.get(), CUDA_R_32F,
                                                m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  const std::vector<float> got = dc.download();
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double want = 0.0, mag = 0.0;
      for (int p = 0; p < k; ++p) {
        const double t = value(a[static_cast<std::size_t>(p) * m + i]) * value(b[static_cast<std::size_t>(p) * n + j]);
        want += t;
        mag += std::fabs(t);
      }
      ASSERT_NEAR(got[static_cast<std::size_t>(j) * m + i], want, (k + 2) * std::ldexp(1.0, -24) * mag) << i << "," << j;
    }
  }
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED,
            cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, da.get(), CUDA_R_16BF, m, db.get(),
                         CUDA_R_16BF, n, &beta, dc.get(), CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT))
      << "bf16 C is not emulated";
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED,
            cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, da.get(), CUDA_R_16BF, m, db.get(),
                         CUDA_R_16F, n, &beta, dc.get(), CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT))
      << "mixed operand types";
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_T, m, n + 1, k, &alpha, da.get(), CUDA_R_16BF, m, db.get(),
                         CUDA_R_16BF, n + 1, &beta, dc.get(), CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT))
      << "B sized in 2-byte elements: (n+1) x k is past its allocation";
}

TEST_F(Cublas, OperandsMustBeDeviceMemoryAndArgumentsValid) {
  DeviceBuffer<float> d(16);
  std::vector<float> host(16, 1.0f);
  const float one = 1.0f, zero = 0.0f;
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, host.data(), 4,
                                                     d.get(), 4, &zero, d.get(), 4))
      << "a host pointer as A";
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, d.get(), 3, d.get(), 4, &zero, d.get(), 4))
      << "lda < m";
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 4, 5, 4, &one, d.get(), 4, d.get(), 4, &zero, d.get(), 4))
      << "B and C need 20 floats, the buffer has 16";
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, cublasSetMathMode(handle_, static_cast<cublasMath_t>(7)));
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  int version = 0;
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasGetVersion(handle_, &version));
  EXPECT_EQ(version, CUBLAS_VERSION);
}

TEST_F(Cublas, GemmRunsOnTheHandlesStream) {
  cudaStream_t s = nullptr;
  EMU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasSetStream(handle_, s));
  DeviceBuffer<float> a(4), b(4), c(4);
  a.upload({1, 2, 3, 4});
  b.upload({1, 0, 0, 1});
  Gate gate;
  gate.enqueue(s);
  const float one = 1.0f, zero = 0.0f;
  const cudaEmuCounters before = counters();
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS,
            cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a.get(), 2, b.get(), 2, &zero, c.get(), 2));
  EXPECT_EQ(counters().gemm_calls, before.gemm_calls + 1);
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(s)) << "queued behind the gate, not run by the caller";
  gate.open();
  EMU_CHECK(cudaStreamSynchronize(s));
  EXPECT_EQ(c.download(), (std::vector<float>{1, 2, 3, 4}));
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasSetStream(handle_, nullptr));
  EMU_CHECK(cudaStreamDestroy(s));
}

}  // namespace
}  // namespace cuda_emu::test
