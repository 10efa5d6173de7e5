// cublas.cpp — the emulated cuBLAS: cublasCreate/Destroy, SetStream, SetWorkspace, SetMathMode /
// GetMathMode, GetVersion, GetStatusName/String, cublasSgemm and cublasGemmEx (fp32 or bf16 operands,
// fp32 C, compute type 32F; any other combination is CUBLAS_STATUS_NOT_SUPPORTED), behind the
// toolkit's cublas_v2.h.
// Contract: cuBLAS's documented behaviour for these calls: column-major operands, host pointer mode
// (alpha and beta are read at the call), the GEMM queued on the handle's stream (nullptr = legacy
// default stream) and run by OpenBLAS (cblas_sgemm, CblasColMajor) on the stream's worker, so a
// row-major caller's argument mapping is really exercised. Stricter than cuBLAS where that catches
// bugs: A, B and C must be device memory of the handle's device, and hold the whole matrix that m,
// n, k and the leading dimension describe (else CUBLAS_STATUS_INVALID_VALUE, message on stderr).
// CUBLAS_TF32_TENSOR_OP_MATH rounds every element of A and B to TF32 (10 explicit mantissa bits,
// round to nearest, ties away from zero, as PTX's cvt.rna.tf32.f32) before an fp32 product, so
// --tf32 changes results as on a GPU (exactly how cuBLAS's kernels round is not documented).
// cublasGemmEx with CUDA_R_16BF operands decodes them (exactly: a bf16 is the top half of a float)
// and multiplies in fp32, as the tensor cores' fp32 accumulation does; the math mode does not apply.
// cublasDestroy waits for the device (documented: it calls cudaDeviceSynchronize), so it is refused
// (CUBLAS_STATUS_INTERNAL_ERROR, the capture invalidated) while a stream of the device captures.
// On a capturing stream (graph.hpp) the GEMM, with alpha, beta and the math mode read at the call,
// becomes a graph node; a launch checks again that A, B and C are still allocated.
#include <cblas.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "blas_common.hpp"
#include "counters.hpp"
#include "devices.hpp"
#include "errors.hpp"
#include "graph.hpp"
#include "memory.hpp"
#include "streams.hpp"

struct cublasContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

namespace {

using cuda_emu::Engine;
using cuda_emu::Memory;
using cuda_emu::MemoryKind;
using namespace cuda_emu::blas;  // NOLINT(google-build-using-namespace): the emulator's own helpers

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (cuda_emu::runtime_status() != cudaSuccess || Engine::on_worker_thread()) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* h = new cublasContext();
  h->device = cuda_emu::current_device();
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (cuda_emu::Captures::get().check_device_wait(handle->device, "cublasDestroy") != cudaSuccess) {
    return CUBLAS_STATUS_INTERNAL_ERROR;
  }
  Engine& engine = Engine::get();
  engine.wait_all(engine.device_tails(handle->device), "cublasDestroy");
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;  // the headers' version: what the toolkit's real library would say
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  CUstream_st* s = Engine::get().resolve(stream, handle->device);
  if (s == nullptr || s->device != handle->device) return misuse("cublasSetStream", "invalid stream for the handle");
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (workspace == nullptr && bytes != 0) return misuse("cublasSetWorkspace", "null workspace of non-zero size");
  if (workspace != nullptr) {
    bool overrun = false;
    const cuda_emu::PointerInfo info = Memory::get().lookup_range(workspace, bytes == 0 ? 1 : bytes, &overrun);
    if (info.kind != MemoryKind::Device || info.device != handle->device || overrun) {
      return misuse("cublasSetWorkspace", "the workspace is not " + std::to_string(bytes) + " bytes of device memory");
    }
  }
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const unsigned base = static_cast<unsigned>(mode) & ~unsigned{CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION};
  if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_PEDANTIC_MATH && base != CUBLAS_TF32_TENSOR_OP_MATH &&
      base != CUBLAS_TENSOR_OP_MATH) {
    return misuse("cublasSetMathMode", "math mode " + std::to_string(static_cast<int>(mode)) + " is not emulated");
  }
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "error detected trying to check the license";
  }
  return "unknown error";
}

}  // extern "C"

namespace {

// cublasSgemm and cublasGemmEx: C (fp32) = alpha op(A) op(B) + beta C with A and B of element type ab.
cublasStatus_t emulated_gemm(const char* api, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                             int m, int n, int k, const float* alpha, const void* A, int lda, const void* B, int ldb,
                             Elem ab, const float* beta, float* C, int ldc) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (Engine::on_worker_thread()) return misuse(api, "called from a stream worker");
  if (cuda_emu::device_fault(handle->device) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
  const auto valid_op = [](cublasOperation_t op) {
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
  };
  if (!valid_op(transa) || !valid_op(transb)) return misuse(api, "unknown transpose operation");
  const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;  // C (conjugate) = T for real numbers
  // Stored shapes: A is (m, k) or, transposed, (k, m); B is (k, n) or (n, k); C is (m, n).
  const int a_rows = ta ? k : m, a_cols = ta ? m : k;
  const int b_rows = tb ? n : k, b_cols = tb ? k : n;
  if (m < 0 || n < 0 || k < 0) return misuse(api, "negative dimension");
  if (lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) || ldc < (m > 1 ? m : 1)) {
    return misuse(api, "leading dimension smaller than the stored rows (column-major)");
  }
  if (alpha == nullptr || beta == nullptr) return misuse(api, "null alpha or beta");
  if (Memory::get().lookup(alpha).kind == MemoryKind::Device || Memory::get().lookup(beta).kind == MemoryKind::Device) {
    return misuse(api, "alpha/beta in device memory under the host pointer mode");
  }
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const int device = handle->device;
  if (k > 0) {
    if (const auto s = check_operand(api, "A", A, a_rows, a_cols, lda, ab, device); s != CUBLAS_STATUS_SUCCESS) return s;
    if (const auto s = check_operand(api, "B", B, b_rows, b_cols, ldb, ab, device); s != CUBLAS_STATUS_SUCCESS) return s;
  }
  if (const auto s = check_operand(api, "C", C, m, n, ldc, Elem::F32, device); s != CUBLAS_STATUS_SUCCESS) return s;
  CUstream_st* stream = Engine::get().resolve(handle->stream, device);
  if (stream == nullptr) return misuse(api, "the handle's stream was destroyed");
  bool capturing = false;
  if (const cudaError_t e = cuda_emu::Captures::get().issue_check(stream, &capturing, api);
      e != cudaSuccess) {
    cuda_emu::set_last_error(e);  // as the launch of cuBLAS's kernel would
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  const float a = *alpha, b = *beta;  // host pointer mode: read now
  const bool tf32 = (static_cast<unsigned>(handle->math) & 0xfu) == CUBLAS_TF32_TENSOR_OP_MATH;
  auto run = [=] {
    if (k == 0) {  // C = beta * C; with beta == 0, C is not read (BLAS convention)
      for (int j = 0; j < n; ++j) {
        float* col = C + static_cast<std::size_t>(j) * static_cast<std::size_t>(ldc);
        for (int i = 0; i < m; ++i) col[i] = b == 0.0f ? 0.0f : b * col[i];
      }
      return;
    }
    const CBLAS_TRANSPOSE op_a = ta ? CblasTrans : CblasNoTrans, op_b = tb ? CblasTrans : CblasNoTrans;
    if (ab == Elem::BF16) {
      const std::vector<float> a32 = bf16_copy(A, a_rows, a_cols, lda), b32 = bf16_copy(B, b_rows, b_cols, ldb);
      cblas_sgemm(CblasColMajor, op_a, op_b, m, n, k, a, a32.data(), lda, b32.data(), ldb, b, C, ldc);
    } else if (tf32) {
      const auto* af = static_cast<const float*>(A);
      const auto* bf = static_cast<const float*>(B);
      const std::vector<float> a32 = tf32_copy(af, a_rows, a_cols, lda), b32 = tf32_copy(bf, b_rows, b_cols, ldb);
      cblas_sgemm(CblasColMajor, op_a, op_b, m, n, k, a, a32.data(), lda, b32.data(), ldb, b, C, ldc);
    } else {
      cblas_sgemm(CblasColMajor, op_a, op_b, m, n, k, a, static_cast<const float*>(A), lda,
                  static_cast<const float*>(B), ldb, b, C, ldc);
    }
  };
  if (capturing) {
    cuda_emu::NodeSpec node;
    node.work = cuda_emu::NodeWork::Gemm;
    node.what = api;
    const std::string node_a = std::string(api) + " A", node_b = std::string(api) + " B", node_c = std::string(api) + " C";
    node.prepare = [=]() -> cuda_emu::NodeRun {
      const bool live =
          (k == 0 || (cuda_emu::still_allocated(device, A, stored_bytes(a_rows, a_cols, lda, ab), node_a.c_str()) &&
                      cuda_emu::still_allocated(device, B, stored_bytes(b_rows, b_cols, ldb, ab), node_b.c_str()))) &&
          cuda_emu::still_allocated(device, C, stored_bytes(m, n, ldc, Elem::F32), node_c.c_str());
      return live ? cuda_emu::NodeRun(run) : cuda_emu::NodeRun();
    };
    if (cuda_emu::Captures::get().record(stream, std::move(node)) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
  }
  cuda_emu::counters::gemm();
  Engine::get().enqueue(stream, api, run);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
  return emulated_gemm("cublasSgemm", handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, Elem::F32, beta, C, ldc);
}

// Only what microddp uses (and what a tensor-core bf16 GEMM is): A and B both CUDA_R_32F or both
// CUDA_R_16BF, C CUDA_R_32F, compute type CUBLAS_COMPUTE_32F, any algorithm hint.
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t /*algo*/) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const bool f32 = Atype == CUDA_R_32F && Btype == CUDA_R_32F;
  const bool bf16 = Atype == CUDA_R_16BF && Btype == CUDA_R_16BF;
  if (!(f32 || bf16) || Ctype != CUDA_R_32F || computeType != CUBLAS_COMPUTE_32F) {
    std::fprintf(stderr, "cuda_emu: cublasGemmEx: types A %d, B %d, C %d, compute %d are not emulated\n",
                 static_cast<int>(Atype), static_cast<int>(Btype), static_cast<int>(Ctype),
                 static_cast<int>(computeType));
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return emulated_gemm("cublasGemmEx", handle, transa, transb, m, n, k, static_cast<const float*>(alpha), A, lda, B,
                       ldb, bf16 ? Elem::BF16 : Elem::F32, static_cast<const float*>(beta), static_cast<float*>(C),
                       ldc);
}

}  // extern "C"
