// cublas_lt.cpp — the emulated cuBLASLt: the subset microddp uses, behind the toolkit's cublasLt.h:
// cublasLtCreate/Destroy, the descriptors initialised in caller space (cublasLtMatmulDescInit_internal,
// cublasLtMatrixLayoutInit_internal and cublasLtMatmulPreferenceInit_internal, behind the header's
// inline *Init), cublasLtMatmulDescSetAttribute (COMPUTE_TYPE, SCALE_TYPE, POINTER_MODE host, TRANSA,
// TRANSB, EPILOGUE, BIAS_POINTER, BIAS_DATA_TYPE), cublasLtMatmulPreferenceSetAttribute (SEARCH_MODE
// best fit, MAX_WORKSPACE_BYTES, MIN_ALIGNMENT_A/B/C/D_BYTES), cublasLtMatmulAlgoGetHeuristic, and
// cublasLtMatmul with algo = NULL (the implicit heuristic) or an algorithm the heuristic returned, and
// the epilogues DEFAULT, RELU, BIAS, RELU_BIAS, BGRADA, BGRADB. Anything else is
// CUBLAS_STATUS_NOT_SUPPORTED with a line on stderr.
// Contract: the documented semantics, column-major as the real library: D(m, n) = epi(alpha op(A)
// op(B) + beta C), op(A) (m, k), op(B) (k, n), each layout describing the matrix as stored (rows, cols,
// ld >= rows; C's transpose is always N). BIAS adds bias(i), "length = D rows", to every column before
// the ReLU of RELU_BIAS. BGRADA writes, in the bias pointer, the sum over k of op(A) (one value per row
// of D); BGRADB the sum over k of op(B) (one per column of D); both overwrite the vector (no beta).
// Types: A and B both CUDA_R_32F (compute 32F or 32F_FAST_TF32, which rounds A and B to TF32 as the
// emulated cuBLAS's TF32 math mode does) or both CUDA_R_16BF (compute 32F); C and D CUDA_R_32F; scale
// type 32F; the bias type is D's (the default, or CUDA_R_32F given). In place needs Cdesc's layout
// equal to Ddesc's (rows, cols, ld), out of place the same rows and cols; beta = 0 does not read C.
// Which problems have no algorithm: the refusal table (lt_refusals.hpp; empty by default): the
// heuristic returns none for them (returnAlgoCount 0) and cublasLtMatmul, with or without an
// algorithm, is CUBLAS_STATUS_NOT_SUPPORTED. An algorithm the heuristic returns is tagged with the problem it was
// chosen for (types, transposes, epilogue, layouts), the preference's minimum alignments and its
// workspace: the emulator's stand-in for split-K (a weight-gradient-like problem, k >= 2 max(m, n),
// given a workspace preference of at least m n 4 bytes) needs m n 4 bytes of workspace, every other
// algorithm none. cublasLtMatmul with such an algorithm refuses another problem's
// (CUBLAS_STATUS_INVALID_VALUE), a workspace smaller than the algorithm needs (INVALID_VALUE, as
// documented) and pointers less aligned than the preference promised (INVALID_VALUE: the real
// kernel would read misaligned memory).
// Stricter than cuBLASLt where that catches bugs: every matrix, the bias and the workspace must be
// device memory of the handle's device holding what its layout says; with BGRADA/BGRADB alpha must be
// 1 (the docs do not say whether alpha scales a bias gradient). Bias gradients sum the operands as
// stored (fp32 or decoded bf16), in k order, in fp32.
// As cublasSgemm: queued on `stream` and run by OpenBLAS on its worker; counted as a GEMM (gemm_calls,
// graph_gemm_nodes) and in lt_matmuls (lt_algo_matmuls with an algorithm); heuristic queries count in
// lt_heuristic_queries / lt_heuristic_empty / lt_workspace_preference_bytes; on a capturing stream a
// matmul becomes a graph node (alpha and beta read at the call), whose launches check again that its
// memory is still allocated.
#include <cblas.h>
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
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
#include "lt_refusals.hpp"
#include "memory.hpp"
#include "streams.hpp"

struct cublasLtContext {
  int device = 0;
};

namespace {

using cuda_emu::Engine;
using cuda_emu::Memory;
using cuda_emu::MemoryKind;
using namespace cuda_emu::blas;  // NOLINT(google-build-using-namespace): the emulator's own helpers

// A tag in each initialised descriptor, so a descriptor never initialised is refused.
constexpr std::uint64_t kDescTag = 0x4c546d6174446573ULL;
constexpr std::uint64_t kLayoutTag = 0x4c544c61796f7574ULL;
constexpr std::uint64_t kPrefTag = 0x4c54507265666572ULL;
constexpr std::uint64_t kAlgoTag = 0x4c54416c676f7269ULL;

struct Desc {
  std::uint64_t tag;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  std::int32_t pointer_mode;
  std::int32_t trans_a, trans_b;
  std::uint32_t epilogue;
  const void* bias;
  std::int32_t bias_type;  // -1: D's type
};
struct Layout {
  std::uint64_t tag;
  cudaDataType type;
  std::uint64_t rows, cols;
  std::int64_t ld;
};
struct Preference {
  std::uint64_t tag;
  std::uint64_t max_workspace_bytes;  // default 0: "no workspace allowed"
  std::uint32_t min_align[4];         // A, B, C, D; default 256
};
// What the heuristic returns in cublasLtMatmulAlgo_t: the problem it was chosen for and its needs.
struct Algo {
  std::uint64_t tag;
  std::uint64_t problem;  // fingerprint of the descriptor (without the pointers) and the four layouts
  std::uint64_t workspace_bytes;
  std::uint32_t min_align[4];
};
static_assert(sizeof(Desc) <= sizeof(cublasLtMatmulDescOpaque_t));
static_assert(sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t));
static_assert(sizeof(Preference) <= sizeof(cublasLtMatmulPreferenceOpaque_t));
static_assert(sizeof(Algo) <= sizeof(cublasLtMatmulAlgo_t));

const Desc* desc_of(cublasLtMatmulDesc_t d) {
  const auto* p = reinterpret_cast<const Desc*>(d);
  return d != nullptr && p->tag == kDescTag ? p : nullptr;
}
const Layout* layout_of(cublasLtMatrixLayout_t l) {
  const auto* p = reinterpret_cast<const Layout*>(l);
  return l != nullptr && p->tag == kLayoutTag ? p : nullptr;
}

cublasStatus_t not_supported(const std::string& what) {
  std::fprintf(stderr, "cuda_emu: cublasLtMatmul: %s is not emulated\n", what.c_str());
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

// The problem a descriptor and its layouts describe, checked once for the heuristic and the matmul.
struct Problem {
  bool f32 = false, bf16 = false, tf32 = false;
  bool ta = false, tb = false;
  int m = 0, n = 0, k = 0;
  std::uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  bool bias = false, relu = false, bgrad_a = false, bgrad_b = false;
  bool vector = false;  // the epilogue reads or writes the bias pointer
  int vector_count = 0;
  std::uint64_t fingerprint = 0;
};

void mix(std::uint64_t& h, std::uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

cublasStatus_t check_problem(const char* api, const Desc* desc, const Layout* la, const Layout* lb, const Layout* lc,
                             const Layout* ld, Problem& p) {
  if (desc->pointer_mode != CUBLASLT_POINTER_MODE_HOST) return not_supported("a pointer mode other than host");
  if (desc->scale != CUDA_R_32F) return not_supported("a scale type other than CUDA_R_32F");
  // Types.
  p.f32 = la->type == CUDA_R_32F && lb->type == CUDA_R_32F;
  p.bf16 = la->type == CUDA_R_16BF && lb->type == CUDA_R_16BF;
  if (!(p.f32 || p.bf16) || lc->type != CUDA_R_32F || ld->type != CUDA_R_32F) {
    return not_supported("types A " + std::to_string(la->type) + ", B " + std::to_string(lb->type) + ", C " +
                         std::to_string(lc->type) + ", D " + std::to_string(ld->type));
  }
  p.tf32 = desc->compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  if (!(desc->compute == CUBLAS_COMPUTE_32F || (p.tf32 && p.f32))) {
    return not_supported("compute type " + std::to_string(desc->compute) + " with these operand types");
  }
  // Shapes, in column-major terms as documented.
  const auto valid_op = [](std::int32_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; };
  if (!valid_op(desc->trans_a) || !valid_op(desc->trans_b)) return misuse(api, "unknown transpose operation");
  p.ta = desc->trans_a != CUBLAS_OP_N;
  p.tb = desc->trans_b != CUBLAS_OP_N;
  for (const Layout* l : {la, lb, lc, ld}) {
    if (l->rows > 0x7fffffffULL || l->cols > 0x7fffffffULL || l->ld > 0x7fffffff) {
      return not_supported("a dimension past int32");
    }
    if (l->ld < static_cast<std::int64_t>(l->rows) || l->ld < 1) {
      return misuse(api, "leading dimension smaller than the rows (column-major)");
    }
  }
  p.m = static_cast<int>(p.ta ? la->cols : la->rows);
  p.k = static_cast<int>(p.ta ? la->rows : la->cols);
  const int kb = static_cast<int>(p.tb ? lb->cols : lb->rows);
  p.n = static_cast<int>(p.tb ? lb->rows : lb->cols);
  if (kb != p.k || static_cast<int>(ld->rows) != p.m || static_cast<int>(ld->cols) != p.n || lc->rows != ld->rows ||
      lc->cols != ld->cols) {
    return misuse(api, "the layouts disagree: op(A) " + std::to_string(p.m) + "x" + std::to_string(p.k) + ", op(B) " +
                           std::to_string(kb) + "x" + std::to_string(p.n) + ", D " + std::to_string(ld->rows) + "x" +
                           std::to_string(ld->cols) + ", C " + std::to_string(lc->rows) + "x" +
                           std::to_string(lc->cols));
  }
  // The epilogue and its vector.
  p.epilogue = desc->epilogue;
  const std::uint32_t epi = desc->epilogue;
  p.bias = epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_RELU_BIAS;
  p.relu = epi == CUBLASLT_EPILOGUE_RELU || epi == CUBLASLT_EPILOGUE_RELU_BIAS;
  p.bgrad_a = epi == CUBLASLT_EPILOGUE_BGRADA;
  p.bgrad_b = epi == CUBLASLT_EPILOGUE_BGRADB;
  if (!(epi == CUBLASLT_EPILOGUE_DEFAULT || p.bias || p.relu || p.bgrad_a || p.bgrad_b)) {
    return not_supported("epilogue " + std::to_string(epi));
  }
  p.vector = p.bias || p.bgrad_a || p.bgrad_b;
  p.vector_count = p.bgrad_b ? p.n : p.m;  // BIAS and BGRADA: D's rows; BGRADB: D's columns
  if (p.vector && desc->bias_type != -1 && desc->bias_type != CUDA_R_32F) {
    return not_supported("bias data type " + std::to_string(desc->bias_type));
  }
  std::uint64_t h = 0;
  for (std::int64_t v : {static_cast<std::int64_t>(desc->compute), static_cast<std::int64_t>(desc->trans_a),
                         static_cast<std::int64_t>(desc->trans_b), static_cast<std::int64_t>(desc->epilogue),
                         static_cast<std::int64_t>(desc->bias_type)}) {
    mix(h, static_cast<std::uint64_t>(v));
  }
  for (const Layout* l : {la, lb, lc, ld}) {
    mix(h, static_cast<std::uint64_t>(l->type));
    mix(h, l->rows);
    mix(h, l->cols);
    mix(h, static_cast<std::uint64_t>(l->ld));
  }
  p.fingerprint = h;
  return CUBLAS_STATUS_SUCCESS;
}

cuda_emu::LtProblem table_view(const Problem& p, const Layout* ld, const std::uint32_t align[4]) {
  cuda_emu::LtProblem t;
  t.epilogue = p.epilogue;
  t.tf32 = p.tf32;
  t.bf16 = p.bf16;
  t.m = p.m;
  t.n = p.n;
  t.k = p.k;
  t.ldd_bytes = ld->ld * static_cast<std::int64_t>(sizeof(float));
  t.align_a = align[0];
  t.align_b = align[1];
  t.align_c = align[2];
  t.align_d = align[3];
  return t;
}

// The emulator's workspace stand-in for split-K (see the file comment).
std::uint64_t algo_workspace_bytes(const Problem& p, std::uint64_t max_workspace_bytes) {
  const auto partial = static_cast<std::uint64_t>(p.m) * static_cast<std::uint64_t>(p.n) * sizeof(float);
  const bool split_k = p.k >= 2 * std::max(p.m, p.n) && partial > 0 && partial <= max_workspace_bytes;
  return split_k ? partial : 0;
}

template <typename T>
cublasStatus_t set_value(const void* buf, std::size_t bytes, T* field) {
  if (buf == nullptr || bytes != sizeof(T)) {
    return misuse("cublasLtMatmulDescSetAttribute", "null buffer or a size that is not the attribute's");
  }
  std::memcpy(field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

// Element (i, j) of op(X) for X stored column-major with leading dimension ld.
float op_at(const float* x, bool trans, int i, int j, int ld) {
  return trans ? x[static_cast<std::size_t>(i) * static_cast<std::size_t>(ld) + static_cast<std::size_t>(j)]
               : x[static_cast<std::size_t>(j) * static_cast<std::size_t>(ld) + static_cast<std::size_t>(i)];
}

}  // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (cuda_emu::runtime_status() != cudaSuccess || Engine::on_worker_thread()) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* h = new cublasLtContext();
  h->device = cuda_emu::current_device();
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t desc, size_t size, cublasComputeType_t compute,
                                               cudaDataType_t scale) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(cublasLtMatmulDescOpaque_t)) return CUBLAS_STATUS_ALLOC_FAILED;
  const Desc d{
      kDescTag, compute, scale, CUBLASLT_POINTER_MODE_HOST, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT,
      nullptr,  -1};
  std::memset(desc, 0, size);
  std::memcpy(desc, &d, sizeof d);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes) {
  if (desc_of(desc) == nullptr) return misuse("cublasLtMatmulDescSetAttribute", "the descriptor was not initialised");
  Desc d;
  std::memcpy(&d, desc, sizeof d);
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: {
      std::int32_t v = 0;
      s = set_value(buf, bytes, &v);
      d.compute = static_cast<cublasComputeType_t>(v);
      break;
    }
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: {
      std::int32_t v = 0;
      s = set_value(buf, bytes, &v);
      d.scale = static_cast<cudaDataType_t>(v);
      break;
    }
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      s = set_value(buf, bytes, &d.pointer_mode);
      break;
    case CUBLASLT_MATMUL_DESC_TRANSA:
      s = set_value(buf, bytes, &d.trans_a);
      break;
    case CUBLASLT_MATMUL_DESC_TRANSB:
      s = set_value(buf, bytes, &d.trans_b);
      break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      s = set_value(buf, bytes, &d.epilogue);
      break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      s = set_value(buf, bytes, &d.bias);
      break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
      s = set_value(buf, bytes, &d.bias_type);
      break;
    default:
      std::fprintf(stderr, "cuda_emu: cublasLtMatmulDescSetAttribute: attribute %d is not emulated\n",
                   static_cast<int>(attr));
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (s == CUBLAS_STATUS_SUCCESS) std::memcpy(desc, &d, sizeof d);
  return s;
}

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t layout, size_t size, cudaDataType type,
                                                 uint64_t rows, uint64_t cols, int64_t ld) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(cublasLtMatrixLayoutOpaque_t)) return CUBLAS_STATUS_ALLOC_FAILED;
  const Layout l{kLayoutTag, type, rows, cols, ld};
  std::memset(layout, 0, size);
  std::memcpy(layout, &l, sizeof l);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(cublasLtMatmulPreferenceOpaque_t)) return CUBLAS_STATUS_ALLOC_FAILED;
  const Preference p{kPrefTag, 0, {256, 256, 256, 256}};  // the documented defaults
  std::memset(pref, 0, size);
  std::memcpy(pref, &p, sizeof p);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t bytes) {
  const char* api = "cublasLtMatmulPreferenceSetAttribute";
  Preference p;
  if (pref == nullptr) return misuse(api, "null preference");
  std::memcpy(&p, pref, sizeof p);
  if (p.tag != kPrefTag) return misuse(api, "the preference was not initialised");
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: {
      std::uint32_t mode = 0;
      s = set_value(buf, bytes, &mode);
      if (s == CUBLAS_STATUS_SUCCESS && mode != CUBLASLT_SEARCH_BEST_FIT) {
        std::fprintf(stderr, "cuda_emu: %s: search mode %u is not emulated (best fit only)\n", api, mode);
        return CUBLAS_STATUS_NOT_SUPPORTED;
      }
      break;
    }
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      s = set_value(buf, bytes, &p.max_workspace_bytes);
      break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      s = set_value(buf, bytes, &p.min_align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES]);
      break;
    default:
      std::fprintf(stderr, "cuda_emu: %s: attribute %d is not emulated\n", api, static_cast<int>(attr));
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (s == CUBLAS_STATUS_SUCCESS) std::memcpy(pref, &p, sizeof p);
  return s;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t operation_desc,
                                              cublasLtMatrixLayout_t a_desc, cublasLtMatrixLayout_t b_desc,
                                              cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned) {
  const char* api = "cublasLtMatmulAlgoGetHeuristic";
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested <= 0 || results == nullptr || returned == nullptr) {
    return misuse(api, "requestedAlgoCount <= 0, or a null results array or count");
  }
  *returned = 0;
  const Desc* desc = desc_of(operation_desc);
  const Layout *la = layout_of(a_desc), *lb = layout_of(b_desc), *lc = layout_of(c_desc), *ld = layout_of(d_desc);
  if (desc == nullptr || la == nullptr || lb == nullptr || lc == nullptr || ld == nullptr) {
    return misuse(api, "a descriptor or layout is null or was not initialised");
  }
  Preference pref{kPrefTag, 0, {256, 256, 256, 256}};
  if (preference != nullptr) {
    std::memcpy(&pref, preference, sizeof pref);
    if (pref.tag != kPrefTag) return misuse(api, "the preference was not initialised");
  }
  Problem pr;
  if (const auto st = check_problem(api, desc, la, lb, lc, ld, pr); st != CUBLAS_STATUS_SUCCESS) return st;
  const std::string rule = cuda_emu::lt_refusals().match(table_view(pr, ld, pref.min_align));
  cuda_emu::counters::lt_heuristic(rule.empty(), pref.max_workspace_bytes);
  if (!rule.empty()) return CUBLAS_STATUS_SUCCESS;  // no algorithm: returnAlgoCount 0, as documented
  Algo a{kAlgoTag, pr.fingerprint, algo_workspace_bytes(pr, pref.max_workspace_bytes), {}};
  std::memcpy(a.min_align, pref.min_align, sizeof a.min_align);
  cublasLtMatmulHeuristicResult_t r{};
  std::memcpy(&r.algo, &a, sizeof a);
  r.workspaceSize = a.workspace_bytes;
  r.state = CUBLAS_STATUS_SUCCESS;
  r.wavesCount = 1.0f;
  results[0] = r;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t compute_desc, const void* alpha_p,
                              const void* A, cublasLtMatrixLayout_t a_desc, const void* B,
                              cublasLtMatrixLayout_t b_desc, const void* beta_p, const void* C,
                              cublasLtMatrixLayout_t c_desc, void* D, cublasLtMatrixLayout_t d_desc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                              cudaStream_t stream_id) {
  const char* api = "cublasLtMatmul";
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (Engine::on_worker_thread()) return misuse(api, "called from a stream worker");
  if (cuda_emu::device_fault(handle->device) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
  const Desc* desc = desc_of(compute_desc);
  const Layout *la = layout_of(a_desc), *lb = layout_of(b_desc), *lc = layout_of(c_desc), *ld = layout_of(d_desc);
  if (desc == nullptr || la == nullptr || lb == nullptr || lc == nullptr || ld == nullptr) {
    return misuse(api, "a descriptor or layout is null or was not initialised");
  }
  Problem pr;
  if (const auto st = check_problem(api, desc, la, lb, lc, ld, pr); st != CUBLAS_STATUS_SUCCESS) return st;
  const bool ta = pr.ta, tb = pr.tb, bf16 = pr.bf16, tf32 = pr.tf32;
  const int m = pr.m, n = pr.n, k = pr.k;
  const bool bias = pr.bias, relu = pr.relu, bgrad_a = pr.bgrad_a, bgrad_b = pr.bgrad_b, vector = pr.vector;
  const int vector_count = pr.vector_count;
  if (C == D && lc->ld != ld->ld) return misuse(api, "in place (C == D) with Cdesc different from Ddesc");
  if (vector && desc->bias == nullptr) return misuse(api, "the epilogue needs CUBLASLT_MATMUL_DESC_BIAS_POINTER");
  // The algorithm: the heuristic's for this problem, or none (the implicit heuristic and the table).
  const std::uint32_t actual_align[4] = {cuda_emu::pointer_alignment(A), cuda_emu::pointer_alignment(B),
                                         cuda_emu::pointer_alignment(C), cuda_emu::pointer_alignment(D)};
  if (algo != nullptr) {
    Algo a;
    std::memcpy(&a, algo, sizeof a);
    if (a.tag != kAlgoTag) return misuse(api, "the algo was not returned by cublasLtMatmulAlgoGetHeuristic");
    if (a.problem != pr.fingerprint) {
      return misuse(api, "the algo was chosen for another problem (descriptor or layouts differ)");
    }
    if (workspace_bytes < a.workspace_bytes) {
      return misuse(api, "workspaceSizeInBytes " + std::to_string(workspace_bytes) + " is less than the " +
                             std::to_string(a.workspace_bytes) + " bytes the algo needs");
    }
    for (int i = 0; i < 4; ++i) {
      if (actual_align[i] < a.min_align[i]) {
        return misuse(api, std::string("matrix ") + "ABCD"[i] + " is aligned to " + std::to_string(actual_align[i]) +
                               " bytes, less than the " + std::to_string(a.min_align[i]) +
                               " the heuristic was promised (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*)");
      }
    }
  }
  // The table applies to every call, with an algorithm or without: a kernel may refuse when it runs
  // (another library or GPU than the heuristic's answer was cached for).
  if (const std::string rule = cuda_emu::lt_refusals().match(table_view(pr, ld, actual_align)); !rule.empty()) {
    std::fprintf(stderr, "cuda_emu: cublasLtMatmul: no algorithm for this problem (refusal table: %s)\n", rule.c_str());
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // Scalars (host pointer mode: read now).
  if (alpha_p == nullptr || beta_p == nullptr) return misuse(api, "null alpha or beta");
  if (Memory::get().lookup(alpha_p).kind == MemoryKind::Device ||
      Memory::get().lookup(beta_p).kind == MemoryKind::Device) {
    return misuse(api, "alpha/beta in device memory under the host pointer mode");
  }
  const float alpha = *static_cast<const float*>(alpha_p), beta = *static_cast<const float*>(beta_p);
  if ((bgrad_a || bgrad_b) && alpha != 1.0f) return not_supported("a bias gradient epilogue with alpha != 1");
  // Memory.
  const int device = handle->device;
  const Elem ab = bf16 ? Elem::BF16 : Elem::F32;
  const int lda = static_cast<int>(la->ld), ldb = static_cast<int>(lb->ld), ldc = static_cast<int>(lc->ld),
            ldd = static_cast<int>(ld->ld);
  const int a_rows = static_cast<int>(la->rows), a_cols = static_cast<int>(la->cols);
  const int b_rows = static_cast<int>(lb->rows), b_cols = static_cast<int>(lb->cols);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  if (k > 0) {
    if (const auto s = check_operand(api, "A", A, a_rows, a_cols, lda, ab, device); s != CUBLAS_STATUS_SUCCESS)
      return s;
    if (const auto s = check_operand(api, "B", B, b_rows, b_cols, ldb, ab, device); s != CUBLAS_STATUS_SUCCESS)
      return s;
  }
  if (beta != 0.0f) {
    if (const auto s = check_operand(api, "C", C, m, n, ldc, Elem::F32, device); s != CUBLAS_STATUS_SUCCESS) return s;
  }
  if (const auto s = check_operand(api, "D", D, m, n, ldd, Elem::F32, device); s != CUBLAS_STATUS_SUCCESS) return s;
  if (vector) {
    if (const auto s =
            check_operand(api, "the bias vector", desc->bias, vector_count, 1, vector_count, Elem::F32, device);
        s != CUBLAS_STATUS_SUCCESS) {
      return s;
    }
  }
  if (workspace_bytes > 0) {
    bool overrun = false;
    const cuda_emu::PointerInfo info = Memory::get().lookup_range(workspace, workspace_bytes, &overrun);
    if (workspace == nullptr || info.kind != MemoryKind::Device || info.device != device || overrun) {
      return misuse(api, "the workspace is not workspaceSizeInBytes of device memory");
    }
  }
  CUstream_st* stream = Engine::get().resolve(stream_id, device);
  if (stream == nullptr || stream->device != device) return misuse(api, "invalid stream for the handle's device");
  bool capturing = false;
  if (const cudaError_t e = cuda_emu::Captures::get().issue_check(stream, &capturing, api); e != cudaSuccess) {
    cuda_emu::set_last_error(e);  // as the launch of cuBLASLt's kernel would
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  float* d = static_cast<float*>(D);
  const float* c = static_cast<const float*>(C);
  float* vec = static_cast<float*>(const_cast<void*>(desc->bias));  // written by BGRAD*, read by BIAS
  auto run = [=] {
    // Operands as fp32 (bf16 decoded exactly; TF32 rounded for 32F_FAST_TF32), as the emulated cuBLAS.
    std::vector<float> a32, b32;
    const float* af = static_cast<const float*>(A);
    const float* bf = static_cast<const float*>(B);
    if (k > 0 && bf16) {
      a32 = bf16_copy(A, a_rows, a_cols, lda);
      b32 = bf16_copy(B, b_rows, b_cols, ldb);
    } else if (k > 0 && tf32) {
      a32 = tf32_copy(af, a_rows, a_cols, lda);
      b32 = tf32_copy(bf, b_rows, b_cols, ldb);
    }
    // The bias gradient first, from the operands as stored (before D may overwrite one of them).
    if (bgrad_a || bgrad_b) {
      std::vector<float> decoded;  // bf16: the operand as floats (exact)
      const float* x = bgrad_a ? af : bf;
      if (bf16 && k > 0) {
        decoded = bgrad_a ? bf16_copy(A, a_rows, a_cols, lda) : bf16_copy(B, b_rows, b_cols, ldb);
        x = decoded.data();
      }
      for (int i = 0; i < vector_count; ++i) {
        float s = 0.0f;
        for (int kk = 0; kk < k; ++kk) {
          s += bgrad_a ? op_at(x, ta, i, kk, lda) : op_at(x, tb, kk, i, ldb);
        }
        vec[i] = s;
      }
    }
    // D = beta C (C not read when beta == 0), then D += alpha op(A) op(B).
    for (int j = 0; j < n; ++j) {
      float* dc = d + static_cast<std::size_t>(j) * static_cast<std::size_t>(ldd);
      const float* cc = c + static_cast<std::size_t>(j) * static_cast<std::size_t>(ldc);
      for (int i = 0; i < m; ++i) dc[i] = beta == 0.0f ? 0.0f : beta * cc[i];
    }
    if (k > 0) {
      const CBLAS_TRANSPOSE op_a = ta ? CblasTrans : CblasNoTrans, op_b = tb ? CblasTrans : CblasNoTrans;
      const float* pa = a32.empty() ? af : a32.data();
      const float* pb = b32.empty() ? bf : b32.data();
      cblas_sgemm(CblasColMajor, op_a, op_b, m, n, k, alpha, pa, lda, pb, ldb, 1.0f, d, ldd);
    }
    // The epilogue: + bias(row), then ReLU.
    if (bias || relu) {
      for (int j = 0; j < n; ++j) {
        float* dc = d + static_cast<std::size_t>(j) * static_cast<std::size_t>(ldd);
        for (int i = 0; i < m; ++i) {
          float v = dc[i];
          if (bias) v += vec[i];
          if (relu) v = v > 0.0f ? v : 0.0f;
          dc[i] = v;
        }
      }
    }
  };
  if (capturing) {
    cuda_emu::NodeSpec node;
    node.work = cuda_emu::NodeWork::Gemm;
    node.what = api;
    node.prepare = [=]() -> cuda_emu::NodeRun {
      const bool live =
          (k == 0 ||
           (cuda_emu::still_allocated(device, A, stored_bytes(a_rows, a_cols, lda, ab), "cublasLtMatmul A") &&
            cuda_emu::still_allocated(device, B, stored_bytes(b_rows, b_cols, ldb, ab), "cublasLtMatmul B"))) &&
          (beta == 0.0f ||
           cuda_emu::still_allocated(device, C, stored_bytes(m, n, ldc, Elem::F32), "cublasLtMatmul C")) &&
          cuda_emu::still_allocated(device, D, stored_bytes(m, n, ldd, Elem::F32), "cublasLtMatmul D") &&
          (!vector || cuda_emu::still_allocated(device, vec, static_cast<std::size_t>(vector_count) * sizeof(float),
                                                "cublasLtMatmul bias"));
      return live ? cuda_emu::NodeRun(run) : cuda_emu::NodeRun();
    };
    if (cuda_emu::Captures::get().record(stream, std::move(node)) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
  }
  cuda_emu::counters::gemm();
  cuda_emu::counters::lt_matmul(algo != nullptr);
  Engine::get().enqueue(stream, api, run);
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
