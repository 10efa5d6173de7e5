// test_cublas_lt.cpp — the emulated cublasLtMatmul keeps cuBLASLt's documented column-major contract:
// D = epi(alpha op(A) op(B) + beta C) for every transpose pair and padded leading dimensions, BIAS
// adding bias(i) (length = D's rows) to every column before RELU_BIAS's ReLU, BGRADA writing the sum
// over k of op(A) (one per row of D) and BGRADB the sum over k of op(B) (one per column of D), checked
// against a float64 reference computed here from those definitions; and misuse is refused (layouts that
// disagree, a missing or short bias vector, host operands, an uninitialised descriptor, an attribute of
// the wrong size, an epilogue it does not emulate). Each accepted call counts as one GEMM and one
// cuBLASLt matmul; captured into a CUDA graph it runs at each replay. The heuristic
// (cublasLtMatmulAlgoGetHeuristic with a preference) returns an algorithm tagged with its problem,
// workspace and alignment, which cublasLtMatmul checks; the refusal table makes both refuse.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda_emu/control.h"
#include "cuda_emu/counters.h"
#include "emu_test_util.hpp"

namespace cuda_emu::test {
namespace {

double at(const std::vector<float>& x, bool trans, int ld, int i, int j) {
  return trans ? x[static_cast<std::size_t>(i) * ld + j] : x[static_cast<std::size_t>(j) * ld + i];
}

class CublasLt : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtCreate(&handle_)); }
  void TearDown() override { EXPECT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtDestroy(handle_)); }

  // A descriptor with transposes, epilogue and vector set.
  void init_desc(bool ta, bool tb, cublasLtEpilogue_t epi, const void* vec) {
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatmulDescInit(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const std::int32_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto e = static_cast<std::uint32_t>(epi);
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatmulDescSetAttribute(&desc_, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, 4));
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatmulDescSetAttribute(&desc_, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, 4));
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatmulDescSetAttribute(&desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, 4));
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS,
              cublasLtMatmulDescSetAttribute(&desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vec, sizeof vec));
  }

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDescOpaque_t desc_{};
};

struct Case {
  int m, n, k;
  bool ta, tb;
  cublasLtEpilogue_t epi;
  float beta;
};

TEST_F(CublasLt, EpiloguesFollowTheColumnMajorDefinition) {
  const cublasLtEpilogue_t epilogues[] = {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS,
                                          CUBLASLT_EPILOGUE_RELU,    CUBLASLT_EPILOGUE_RELU_BIAS,
                                          CUBLASLT_EPILOGUE_BGRADA,  CUBLASLT_EPILOGUE_BGRADB};
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (const cublasLtEpilogue_t epi : epilogues) {
    for (const int ta : {0, 1}) {
      for (const int tb : {0, 1}) {
        for (const float beta : {0.0f, 0.5f}) {
          const Case c{13, 7, 29, ta != 0, tb != 0, epi, beta};
          SCOPED_TRACE("epilogue " + std::to_string(epi) + " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) +
                       " beta=" + std::to_string(beta));
          const int pad = 3;
          const int a_rows = c.ta ? c.k : c.m, a_cols = c.ta ? c.m : c.k;
          const int b_rows = c.tb ? c.n : c.k, b_cols = c.tb ? c.k : c.n;
          const int lda = a_rows + pad, ldb = b_rows + pad, ldc = c.m + pad;
          std::vector<float> a(static_cast<std::size_t>(lda) * a_cols), b(static_cast<std::size_t>(ldb) * b_cols);
          std::vector<float> c0(static_cast<std::size_t>(ldc) * c.n);
          for (float& v : a) v = normal(rng);
          for (float& v : b) v = normal(rng);
          for (float& v : c0) v = normal(rng);
          const bool bgrad_b = epi == CUBLASLT_EPILOGUE_BGRADB;
          const int vec_count = bgrad_b ? c.n : c.m;
          std::vector<float> vec(static_cast<std::size_t>(vec_count));
          for (float& v : vec) v = normal(rng);
          DeviceBuffer<float> da(a.size()), db(b.size()), dc(c0.size()), dv(vec.size());
          da.upload(a);
          db.upload(b);
          dc.upload(c0);
          dv.upload(vec);
          init_desc(c.ta, c.tb, epi, dv.get());
          cublasLtMatrixLayoutOpaque_t la{}, lb{}, lc{};
          ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&la, CUDA_R_32F, a_rows, a_cols, lda));
          ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&lb, CUDA_R_32F, b_rows, b_cols, ldb));
          ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&lc, CUDA_R_32F, c.m, c.n, ldc));
          const float alpha = 1.0f;  // BGRAD* takes alpha = 1 only (see below)
          cudaEmuResetCounters();
          ASSERT_EQ(CUBLAS_STATUS_SUCCESS,
                    cublasLtMatmul(handle_, &desc_, &alpha, da.get(), &la, db.get(), &lb, &c.beta, dc.get(), &lc,
                                   dc.get(), &lc, nullptr, nullptr, 0, nullptr));
          cudaEmuCounters counted{};
          cudaEmuGetCounters(&counted);
          EXPECT_EQ(counted.gemm_calls, 1u);
          EXPECT_EQ(counted.lt_matmuls, 1u);
          const auto d = dc.download();
          const auto v_out = dv.download();
          const bool bias = epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_RELU_BIAS;
          const bool relu = epi == CUBLASLT_EPILOGUE_RELU || epi == CUBLASLT_EPILOGUE_RELU_BIAS;
          for (int j = 0; j < c.n; ++j) {
            for (int i = 0; i < c.m; ++i) {
              double s = 0.0, mag = 0.0;
              for (int p = 0; p < c.k; ++p) {
                const double t = at(a, c.ta, lda, i, p) * at(b, c.tb, ldb, p, j);
                s += t;
                mag += std::fabs(t);
              }
              const double cij = c0[static_cast<std::size_t>(j) * ldc + i];
              double want = alpha * s + c.beta * cij;
              if (bias) want += vec[static_cast<std::size_t>(i)];
              if (relu) want = std::max(want, 0.0);
              mag += std::fabs(c.beta * cij) + (bias ? std::fabs(vec[static_cast<std::size_t>(i)]) : 0.0);
              // Within (k + 3) u of the sum of |terms| (fp32 summation), x2 margin.
              ASSERT_NEAR(d[static_cast<std::size_t>(j) * ldc + i], want, 2.0 * (c.k + 3) * 0x1p-24 * mag)
                  << "D(" << i << ", " << j << ")";
            }
          }
          if (epi == CUBLASLT_EPILOGUE_BGRADA || bgrad_b) {
            for (int i = 0; i < vec_count; ++i) {
              double s = 0.0, mag = 0.0;
              for (int p = 0; p < c.k; ++p) {
                const double t = bgrad_b ? at(b, c.tb, ldb, p, i) : at(a, c.ta, lda, i, p);
                s += t;
                mag += std::fabs(t);
              }
              ASSERT_NEAR(v_out[static_cast<std::size_t>(i)], s, 2.0 * (c.k + 3) * 0x1p-24 * mag) << "vector " << i;
            }
          } else {
            EXPECT_EQ(v_out, vec) << "a bias is only read";
          }
        }
      }
    }
  }
}

TEST_F(CublasLt, RefusesMisuse) {
  const int m = 4, n = 3, k = 5;
  DeviceBuffer<float> a(m * k), b(k * n), d(m * n), bias(m), short_bias(m - 1);
  std::vector<float> host(64, 1.0f);
  cublasLtMatrixLayoutOpaque_t la{}, lb{}, ld{}, wrong{};
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&la, CUDA_R_32F, m, k, m));
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&lb, CUDA_R_32F, k, n, k));
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&ld, CUDA_R_32F, m, n, m));
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&wrong, CUDA_R_32F, n, m, n));  // D transposed
  const float alpha = 1.0f, beta = 0.0f;
  auto matmul = [&](const void* A, cublasLtMatrixLayoutOpaque_t* dl) {
    return cublasLtMatmul(handle_, &desc_, &alpha, A, &la, b.get(), &lb, &beta, d.get(), dl, d.get(), dl, nullptr,
                          nullptr, 0, nullptr);
  };
  init_desc(false, false, CUBLASLT_EPILOGUE_BIAS, bias.get());
  EXPECT_EQ(CUBLAS_STATUS_SUCCESS, matmul(a.get(), &ld));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, matmul(a.get(), &wrong)) << "D's layout is not op(A) op(B)'s shape";
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, matmul(host.data(), &ld)) << "A in host memory";
  init_desc(false, false, CUBLASLT_EPILOGUE_BIAS, short_bias.get());
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, matmul(a.get(), &ld)) << "the bias is shorter than D's rows";
  init_desc(false, false, CUBLASLT_EPILOGUE_BGRADB, short_bias.get());
  EXPECT_EQ(CUBLAS_STATUS_SUCCESS, matmul(a.get(), &ld)) << "BGRADB's vector has D's columns (3), not rows";
  init_desc(false, false, CUBLASLT_EPILOGUE_BGRADA, short_bias.get());
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, matmul(a.get(), &ld)) << "BGRADA's vector has D's rows (4)";
  init_desc(false, false, CUBLASLT_EPILOGUE_RELU_BIAS, nullptr);
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, matmul(a.get(), &ld)) << "no bias pointer";
  init_desc(false, false, CUBLASLT_EPILOGUE_DRELU, bias.get());
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED, matmul(a.get(), &ld)) << "an epilogue the emulator does not know";
  const std::int64_t too_wide = CUBLAS_OP_T;
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            cublasLtMatmulDescSetAttribute(&desc_, CUBLASLT_MATMUL_DESC_TRANSA, &too_wide, sizeof too_wide))
      << "TRANSA is an int32_t";
  cublasLtMatmulDescOpaque_t never_initialised{};
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            cublasLtMatmul(handle_, &never_initialised, &alpha, a.get(), &la, b.get(), &lb, &beta, d.get(), &ld,
                           d.get(), &ld, nullptr, nullptr, 0, nullptr));
  // bf16 operands with the TF32 compute type is no cuBLASLt combination.
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatmulDescInit(&desc_, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F));
  cublasLtMatrixLayoutOpaque_t la16{}, lb16{};
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&la16, CUDA_R_16BF, m, k, m));
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&lb16, CUDA_R_16BF, k, n, k));
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED, cublasLtMatmul(handle_, &desc_, &alpha, a.get(), &la16, b.get(), &lb16, &beta,
                                                        d.get(), &ld, d.get(), &ld, nullptr, nullptr, 0, nullptr));
}

// 32F_FAST_TF32 rounds A and B to TF32 before the product: 1 + 2^-12 becomes 1.
TEST_F(CublasLt, FastTf32ComputeRoundsTheOperands) {
  DeviceBuffer<float> a(1), b(1), d(1);
  a.upload({1.0f + 0x1p-12f});
  b.upload({1.0f});
  cublasLtMatrixLayoutOpaque_t l{};
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&l, CUDA_R_32F, 1, 1, 1));
  const float alpha = 1.0f, beta = 0.0f;
  for (const bool tf32 : {false, true}) {
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS,
              cublasLtMatmulDescInit(&desc_, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatmul(handle_, &desc_, &alpha, a.get(), &l, b.get(), &l, &beta, d.get(),
                                                    &l, d.get(), &l, nullptr, nullptr, 0, nullptr));
    EXPECT_EQ(d.download()[0], tf32 ? 1.0f : 1.0f + 0x1p-12f);
  }
}

// On a capturing stream the matmul is a graph node, not run: each replay runs it with the buffers'
// contents at replay time (the bias is read then), counted as a replayed GEMM.
TEST_F(CublasLt, CapturedIntoAGraphRunsAtEachReplay) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceBuffer<float> a(1), b(1), d(1), bias(1);
  a.upload({2.0f});
  b.upload({3.0f});
  bias.upload({1.0f});
  d.upload({-100.0f});
  init_desc(false, false, CUBLASLT_EPILOGUE_RELU_BIAS, bias.get());
  cublasLtMatrixLayoutOpaque_t l{};
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&l, CUDA_R_32F, 1, 1, 1));
  const float alpha = 1.0f, beta = 0.0f;
  ASSERT_EQ(cudaSuccess, cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cudaEmuResetCounters();
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatmul(handle_, &desc_, &alpha, a.get(), &l, b.get(), &l, &beta, d.get(), &l,
                                                  d.get(), &l, nullptr, nullptr, 0, stream));
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamEndCapture(stream, &graph));
  cudaEmuCounters counted{};
  cudaEmuGetCounters(&counted);
  EXPECT_EQ(counted.gemm_calls + counted.lt_matmuls, 0u) << "recorded, not run";
  EXPECT_EQ(counted.captured_operations, 1u);
  EXPECT_EQ(d.download()[0], -100.0f);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaSuccess, cudaGraphInstantiate(&exec, graph, 0));
  ASSERT_EQ(cudaSuccess, cudaGraphLaunch(exec, stream));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream));
  EXPECT_EQ(d.download()[0], 7.0f);  // relu(2 * 3 + 1)
  bias.upload({-50.0f});
  ASSERT_EQ(cudaSuccess, cudaGraphLaunch(exec, stream));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream));
  EXPECT_EQ(d.download()[0], 0.0f);  // relu(6 - 50): the bias as it is at the replay
  cudaEmuGetCounters(&counted);
  EXPECT_EQ(counted.graph_gemm_nodes, 2u);
  EXPECT_EQ(cudaSuccess, cudaGraphExecDestroy(exec));
  EXPECT_EQ(cudaSuccess, cudaGraphDestroy(graph));
  EXPECT_EQ(cudaSuccess, cudaStreamDestroy(stream));
}

// ---- the heuristic, its algorithms and the refusal table (lt_refusals.hpp) --------------------------

class CublasLtHeuristic : public CublasLt {
 protected:
  void TearDown() override {
    EXPECT_EQ(cudaEmuSetLtRefusals(""), 0);
    CublasLt::TearDown();
  }
  // Layouts of a column-major problem with op(A) (m x k), op(B) (k x n), no transposes.
  void layouts(int m, int n, int k) {
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&la_, CUDA_R_32F, m, k, m));
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&lb_, CUDA_R_32F, k, n, k));
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatrixLayoutInit(&ld_, CUDA_R_32F, m, n, m));
  }
  // The heuristic's answer for the current descriptor and layouts under `pref`: the number returned.
  int ask(cublasLtMatmulPreference_t pref, cublasLtMatmulHeuristicResult_t* out) {
    int found = -1;
    EXPECT_EQ(CUBLAS_STATUS_SUCCESS,
              cublasLtMatmulAlgoGetHeuristic(handle_, &desc_, &la_, &lb_, &ld_, &ld_, pref, 1, out, &found));
    return found;
  }
  static cudaEmuCounters counters() {
    cudaEmuCounters c{};
    cudaEmuGetCounters(&c);
    return c;
  }
  cublasLtMatrixLayoutOpaque_t la_{}, lb_{}, ld_{};
};

// The table's grammar: every condition parses, a rule matches when all its conditions hold, an
// unknown condition is refused and leaves the table as it was.
TEST_F(CublasLtHeuristic, RefusalTableMatchesWholeRulesAndRefusesTypos) {
  DeviceBuffer<float> bias(8);
  init_desc(false, false, CUBLASLT_EPILOGUE_BIAS, bias.get());
  layouts(8, 4, 16);
  cublasLtMatmulHeuristicResult_t r{};
  EXPECT_EQ(cudaEmuSetLtRefusals("epilogue=bias,compute=tf32"), 0);
  EXPECT_EQ(ask(nullptr, &r), 1) << "compute 32F: the rule's second condition does not hold";
  EXPECT_EQ(cudaEmuSetLtRefusals("epilogue=bgradb; epilogue=bias,ab=f32,compute=32f"), 0);
  EXPECT_EQ(ask(nullptr, &r), 0) << "the second rule matches";
  EXPECT_EQ(cudaEmuSetLtRefusals("ldd_bytes<64"), 0);
  EXPECT_EQ(ask(nullptr, &r), 0) << "ld 8 floats = 32 bytes";
  EXPECT_EQ(cudaEmuSetLtRefusals("ldd_bytes<32"), 0);
  EXPECT_EQ(ask(nullptr, &r), 1);
  EXPECT_EQ(cudaEmuSetLtRefusals("dim=1"), 0);
  EXPECT_EQ(ask(nullptr, &r), 1);
  layouts(8, 1, 16);
  EXPECT_EQ(ask(nullptr, &r), 0) << "n = 1";
  layouts(8, 4, 16);
  EXPECT_EQ(cudaEmuSetLtRefusals("align<256"), 0);
  EXPECT_EQ(ask(nullptr, &r), 1) << "the preference's default alignments are 256";
  cublasLtMatmulPreferenceOpaque_t pref{};
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatmulPreferenceInit(&pref));
  const std::uint32_t sixteen = 16;
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatmulPreferenceSetAttribute(
                                       &pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &sixteen, sizeof sixteen));
  EXPECT_EQ(ask(&pref, &r), 0) << "B promised only 16-byte alignment";
  EXPECT_EQ(cudaEmuSetLtRefusals("all"), 0);
  EXPECT_EQ(ask(nullptr, &r), 0);
  EXPECT_EQ(cudaEmuSetLtRefusals("epilogue=gelu"), -1);
  EXPECT_EQ(cudaEmuSetLtRefusals("dim=2"), -1);
  EXPECT_EQ(cudaEmuSetLtRefusals("align<0"), -1);
  EXPECT_EQ(ask(nullptr, &r), 0) << "a malformed table changes nothing";
  const cudaEmuCounters c = counters();
  EXPECT_GT(c.lt_heuristic_empty, 0u);
}

// What an algorithm carries: the problem it was chosen for, the workspace it needs (the split-K
// stand-in for k >= 2 max(m, n), only when the preference allows the workspace) and the alignment it
// was promised. cublasLtMatmul with it runs the same arithmetic as with algo = NULL, refuses another
// problem, a smaller workspace and less aligned pointers; the table applies to it too.
TEST_F(CublasLtHeuristic, AnAlgorithmIsForItsProblemWorkspaceAndAlignment) {
  constexpr int m = 6, n = 5, k = 40;
  DeviceBuffer<float> a(std::size_t{m * k + 1}), b(std::size_t{k * n}), d(std::size_t{m * n}),
      d_ref(std::size_t{m * n}), bias(std::size_t{m}), ws(std::size_t{m * n});
  std::vector<float> av(std::size_t{m * k + 1}), bv(std::size_t{k * n});
  for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i % 7) - 3.0f;
  for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i % 5) - 2.0f;
  a.upload(av);
  b.upload(bv);
  bias.upload(std::vector<float>(std::size_t{m}, 0.5f));
  init_desc(false, false, CUBLASLT_EPILOGUE_RELU_BIAS, bias.get());
  layouts(m, n, k);
  cublasLtMatmulHeuristicResult_t none{}, split{};
  cudaEmuResetCounters();
  ASSERT_EQ(ask(nullptr, &none), 1);
  EXPECT_EQ(none.workspaceSize, 0u) << "the default preference allows no workspace";
  cublasLtMatmulPreferenceOpaque_t pref{};
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatmulPreferenceInit(&pref));
  const std::uint64_t ws_bytes = 1u << 20;
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                        &ws_bytes, sizeof ws_bytes));
  ASSERT_EQ(ask(&pref, &split), 1);
  EXPECT_EQ(split.workspaceSize, static_cast<std::size_t>(m * n * 4)) << "k >= 2 max(m, n): split-K needs a workspace";
  cudaEmuCounters c = counters();
  EXPECT_EQ(c.lt_heuristic_queries, 2u);
  EXPECT_EQ(c.lt_workspace_preference_bytes, ws_bytes);
  const float alpha = 1.0f, beta = 0.0f;
  auto run = [&](const cublasLtMatmulAlgo_t* algo, const void* pa, float* out, void* w, std::size_t wb) {
    return cublasLtMatmul(handle_, &desc_, &alpha, pa, &la_, b.get(), &lb_, &beta, out, &ld_, out, &ld_, algo, w, wb,
                          nullptr);
  };
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, run(nullptr, a.get(), d_ref.get(), nullptr, 0));
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, run(&split.algo, a.get(), d.get(), ws.get(), m * n * 4));
  EXPECT_EQ(d.download(), d_ref.download()) << "the algorithm computes what algo = NULL computes";
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, run(&split.algo, a.get(), d.get(), ws.get(), m * n * 4 - 4))
      << "a workspace smaller than the algorithm needs";
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, run(&split.algo, a.get() + 1, d.get(), ws.get(), m * n * 4))
      << "A aligned to 4 bytes, 256 promised";
  cublasLtMatmulAlgo_t forged = none.algo;
  forged.data[0] ^= 1;
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, run(&forged, a.get(), d.get(), nullptr, 0)) << "not the heuristic's";
  layouts(m, n, k - 1);
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, run(&none.algo, a.get(), d.get(), nullptr, 0)) << "another problem's";
  layouts(m, n, k);
  EXPECT_EQ(cudaEmuSetLtRefusals("epilogue=relu_bias"), 0);
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED, run(&none.algo, a.get(), d.get(), nullptr, 0))
      << "the table refuses a call with an algorithm too";
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED, run(nullptr, a.get(), d.get(), nullptr, 0));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  c = counters();
  EXPECT_EQ(c.lt_matmuls, 2u);
  EXPECT_EQ(c.lt_algo_matmuls, 1u);
}

}  // namespace
}  // namespace cuda_emu::test
