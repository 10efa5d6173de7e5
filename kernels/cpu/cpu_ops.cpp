// cpu_ops.cpp — CpuOps: the Ops interface on the host (OpenBLAS sgemm + single-pass loops).
// Contract (see ops.hpp): row-major; backward ops accumulate; softmax_xent overwrites dlogits and
// loss_out and throws core::Error on a label outside [0, classes); nothing allocates but
// allocate_bytes (host memory, 64-byte aligned, zero-filled); every call finishes before it returns
// (synchronize() is a no-op, the host copies are memcpy).
// Performance: GEMM dominates the step, so each element-wise op is one streaming pass (bias + ReLU
// fused, the optimizer one pass over p/g/m/v) with __restrict pointers and branch-free inner loops
// that GCC vectorises; per-element math comes from elementwise.hpp (shared with the CUDA kernels).
#include <cblas.h>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>

#include "core/aligned_alloc.hpp"
#include "core/error.hpp"
#include "kernels/cpu/f16_arrays.hpp"
#include "kernels/cpu/tiled_gemm.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/host_reduce.hpp"
#include "kernels/ops.hpp"
#include "kernels/synthetic_data.hpp"

// OpenBLAS extensions; Debian's openblas cblas.h declares them, other cblas.h variants may not.
// Redeclaring an identical extern "C" prototype is harmless.
extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char* openblas_get_config(void);
}

namespace microddp::kernels {

namespace {

// 64 bytes: a cache line and an AVX-512 vector, so buffers never split a vector load or share a line
// with a neighbour; also a multiple of every element type's alignment ("aligned for any type").
constexpr std::size_t kHostAlignBytes = 64;

// BLAS takes int dimensions; refuse (instead of silently wrapping) anything larger.
int blas_int(std::int64_t v, const char* what) {
  MDDP_CHECK(v >= 0 && v <= INT_MAX, "gemm: " << what << " = " << v << " does not fit BLAS's int");
  return static_cast<int>(v);
}

class CpuOps final : public Ops {
 public:
  CpuOps(int blas_threads, CpuGemm gemm_mode)
      : gemm_mode_(gemm_mode), threads_(blas_threads), pool_(gemm_mode == CpuGemm::FixedTiles ? blas_threads : 1) {
    MDDP_CHECK(blas_threads >= 1, "blas_threads must be >= 1, got " << blas_threads);
    openblas_set_num_threads(1);
  }

  core::Device device() const override { return core::Device::Host; }

  std::string description() const override {
    std::ostringstream os;
    os << "cpu (" << openblas_get_config() << ", " << threads_ << (threads_ == 1 ? " thread" : " threads")
       << (gemm_mode_ == CpuGemm::FixedTiles ? ", fixed GEMM tiles)" : ", OpenBLAS-threaded GEMM)");
    return os.str();
  }

  void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
            const float* b, float beta, float* c) override {
    const int mi = blas_int(m, "m"), ni = blas_int(n, "n"), ki = blas_int(k, "k");
    if (mi == 0 || ni == 0) return;
    // Leading dimensions of the row-major operands as stored; BLAS requires >= 1 even when empty.
    const int lda = blas_int(trans_a ? m : (k > 0 ? k : 1), "lda");
    const int ldb = blas_int(trans_b ? (k > 0 ? k : 1) : n, "ldb");
    if (gemm_mode_ == CpuGemm::FixedTiles) {
      tiled_sgemm(pool_, trans_a, trans_b, mi, ni, ki, alpha, a, lda, b, ldb, beta, c, ni);
      return;
    }
    openblas_set_num_threads(threads_);
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, mi, ni, ki,
                alpha, a, lda, b, ldb, beta, c, ni);
    openblas_set_num_threads(1);
  }

  // The bf16 reference: decode both operands exactly, then the fp32 GEMM above. Products of two bf16
  // values (8-bit significands) are exact in fp32, so only the summation order can differ from the GPU.
  void gemm_bf16(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const std::uint16_t* a, const std::uint16_t* b, float beta, float* c) override {
    MDDP_CHECK(m >= 0 && n >= 0 && k >= 0, "gemm_bf16: negative shape (" << m << ", " << n << ", " << k << ")");
    const std::int64_t a_count = m * k, b_count = k * n;
    MDDP_CHECK(a_count <= bf16_reserved_ && b_count <= bf16_reserved_,
               "gemm_bf16: operands of " << a_count << " and " << b_count << " elements, workspace reserved for "
                                         << bf16_reserved_ << " (reserve_bf16_gemm at set-up)");
    decode_wire16(Wire16::BF16, a, bf16_a_.get(), a_count);
    decode_wire16(Wire16::BF16, b, bf16_b_.get(), b_count);
    gemm(trans_a, trans_b, m, n, k, alpha, bf16_a_.get(), bf16_b_.get(), beta, c);
  }

  void reserve_bf16_gemm(std::int64_t elements) override {
    MDDP_CHECK(elements >= 0, "reserve_bf16_gemm: negative count " << elements);
    if (elements <= bf16_reserved_) return;
    const auto bytes = static_cast<std::size_t>(elements) * sizeof(float);
    bf16_a_.reset(static_cast<float*>(core::aligned_zeroed_alloc(bytes, kHostAlignBytes, "reserve_bf16_gemm")));
    bf16_b_.reset(static_cast<float*>(core::aligned_zeroed_alloc(bytes, kHostAlignBytes, "reserve_bf16_gemm")));
    bf16_reserved_ = elements;
  }

  // ---- fused GEMM + epilogue (ops.hpp): exactly the unfused sequences, so these are the reference ----
  void gemm_bias_act(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                     const float* b, const float* bias, float* c, bool relu_on) override {
    gemm(trans_a, trans_b, m, n, k, 1.0f, a, b, 0.0f, c);
    bias_act_forward(c, bias, m, n, relu_on);
  }
  void gemm_bias_act_bf16(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                          const std::uint16_t* a, const std::uint16_t* b, const float* bias, float* c,
                          bool relu_on) override {
    gemm_bf16(trans_a, trans_b, m, n, k, 1.0f, a, b, 0.0f, c);
    bias_act_forward(c, bias, m, n, relu_on);
  }
  void gemm_bias_grad(std::int64_t out, std::int64_t in, std::int64_t rows, const float* dy, const float* x, float* dw,
                      float* db, bool accumulate) override {
    if (!accumulate) zero(db, out);
    bias_grad(db, dy, rows, out);
    gemm(true, false, out, in, rows, 1.0f, dy, x, accumulate ? 1.0f : 0.0f, dw);
  }

  void bias_act_forward(float* y, const float* bias, std::int64_t rows, std::int64_t cols, bool relu_on) override {
    check_shape(rows, cols, "bias_act_forward");
    // Two loop copies so the inner loop has no branch: add + max per element, vectorised.
    if (relu_on) {
      for (std::int64_t r = 0; r < rows; ++r) bias_row<true>(y + r * cols, bias, cols);
    } else {
      for (std::int64_t r = 0; r < rows; ++r) bias_row<false>(y + r * cols, bias, cols);
    }
  }

  void relu_backward(float* __restrict dy, const float* __restrict y, std::int64_t count) override {
    MDDP_CHECK(count >= 0, "relu_backward: negative count " << count);
    for (std::int64_t i = 0; i < count; ++i) dy[i] = kernels::relu_backward(dy[i], y[i]);
  }

  void bias_grad(float* __restrict db, const float* __restrict dy, std::int64_t rows, std::int64_t cols) override {
    check_shape(rows, cols, "bias_grad");
    // Row by row into db itself (accumulate contract): db stays in cache, dy streams once.
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* __restrict row = dy + r * cols;
      for (std::int64_t j = 0; j < cols; ++j) db[j] += row[j];
    }
  }

  void softmax_xent(const float* logits, const std::int32_t* labels, std::int64_t rows, std::int64_t classes,
                    float scale, float* dlogits, float* loss_out) override {
    check_shape(rows, classes, "softmax_xent");
    MDDP_CHECK(classes >= 1, "softmax_xent needs at least one class");
    // Check every label before writing anything, so a bad batch leaves the outputs untouched.
    for (std::int64_t r = 0; r < rows; ++r) {
      MDDP_CHECK(xent_label_ok(labels[r], classes),
                 "softmax_xent: label " << labels[r] << " of row " << r << " outside [0, " << classes << ")");
    }
    double loss = 0.0;  // double: thousands of row losses summed without drift
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* __restrict x = logits + r * classes;
      float* __restrict d = dlogits + r * classes;
      float row_max = x[0];
      for (std::int64_t j = 1; j < classes; ++j) row_max = xent_max(row_max, x[j]);
      // First pass stores e_j in the output so the second pass need not recompute exp.
      float sum_exp = 0.0f;
      for (std::int64_t j = 0; j < classes; ++j) {
        d[j] = xent_exp(x[j], row_max);
        sum_exp += d[j];
      }
      const float inv_sum = 1.0f / sum_exp;
      const std::int32_t label = labels[r];
      for (std::int64_t j = 0; j < classes; ++j) d[j] = xent_grad(d[j], inv_sum, j == label, scale);
      loss += static_cast<double>(xent_row_loss(x[label], row_max, sum_exp));
    }
    *loss_out = static_cast<float>(static_cast<double>(scale) * loss);
  }

  void adam_step(const AdamParams& params, float* __restrict p, const float* __restrict g, float* __restrict m,
                 float* __restrict v, std::int64_t n, std::uint16_t* __restrict p_bf16) override {
    MDDP_CHECK(n >= 0, "adam_step: negative count " << n);
    const AdamParams a = params;  // local copy: the compiler can keep it in registers (no aliasing)
    for (std::int64_t i = 0; i < n; ++i) adam_update(a, p[i], g[i], m[i], v[i]);
    round_to_bf16(p, p_bf16, n);
  }

  void sgd_step(const SgdParams& params, float* __restrict p, const float* __restrict g, float* __restrict momentum_buf,
                std::int64_t n, std::uint16_t* __restrict p_bf16) override {
    MDDP_CHECK(n >= 0, "sgd_step: negative count " << n);
    const SgdParams s = params;
    if (s.momentum != 0.0f) {
      MDDP_CHECK(momentum_buf != nullptr || n == 0, "sgd_step: momentum " << s.momentum << " needs a momentum buffer");
      for (std::int64_t i = 0; i < n; ++i) sgd_update(s, p[i], g[i], momentum_buf[i]);
    } else {
      float unused = 0.0f;  // sgd_update does not touch buf when momentum == 0
      for (std::int64_t i = 0; i < n; ++i) sgd_update(s, p[i], g[i], unused);
    }
    round_to_bf16(p, p_bf16, n);
  }

  // The optimizers' bf16 copy of the weights (p_bf16 may be null: none). A loop of its own on the CPU
  // (the reference: same bits as the GPU's fused store), so the update loops above stay vectorised.
  static void round_to_bf16(const float* __restrict p, std::uint16_t* __restrict p_bf16, std::int64_t n) {
    if (p_bf16 == nullptr) return;
    for (std::int64_t i = 0; i < n; ++i) p_bf16[i] = float_to_bf16_bits(p[i]);
  }

  void scale(float* x, float alpha, std::int64_t n) override {
    MDDP_CHECK(n >= 0, "scale: negative count " << n);
    for (std::int64_t i = 0; i < n; ++i) x[i] *= alpha;
  }

  void axpy(float alpha, const float* __restrict x, float* __restrict y, std::int64_t n) override {
    MDDP_CHECK(n >= 0, "axpy: negative count " << n);
    for (std::int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
  }

  // One loop per format and residual choice, so each is a branch-free loop the compiler can vectorise.
  void encode_wire16(Wire16 f, const float* src, std::uint16_t* dst, float* residual, std::int64_t n) override {
    MDDP_CHECK(n >= 0, "encode_wire16: negative count " << n);
    if (f == Wire16::F16) {
      f16_encode_array(src, dst, residual, n);  // F16C where the processor has it: the scalar fp16
      return;                                   // rounding has branches no compiler vectorises
    }
    if (residual != nullptr) {
      for (std::int64_t i = 0; i < n; ++i) residual[i] = wire16_encode_residual(f, src[i], dst + i);
    } else {
      for (std::int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16_bits(src[i]);
    }
  }

  void decode_wire16(Wire16 f, const std::uint16_t* __restrict src, float* __restrict dst, std::int64_t n) override {
    MDDP_CHECK(n >= 0, "decode_wire16: negative count " << n);
    if (f == Wire16::F16) {
      f16_decode_array(src, dst, n);
    } else {
      for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_float(src[i]);
    }
  }

  void zero(float* x, std::int64_t n) override {
    MDDP_CHECK(n >= 0, "zero: negative count " << n);
    if (n > 0) std::memset(x, 0, static_cast<std::size_t>(n) * sizeof(float));  // all-zero bits == 0.0f
  }

  void copy(float* dst, const float* src, std::int64_t n) override {
    MDDP_CHECK(n >= 0, "copy: negative count " << n);
    if (n > 0 && dst != src) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
  }

  void synthetic_rows(const SyntheticSpec& spec, std::int64_t first, std::int64_t count, float* x,
                      std::int32_t* y) override {
    synthetic_rows_host(spec, first, count, x, y);
  }

  double sum_squares(const float* x, std::int64_t n) override { return host_sum_squares(x, n); }

  void* allocate_bytes(std::size_t bytes) override {
    return core::aligned_zeroed_alloc(bytes, kHostAlignBytes, "allocate_bytes");  // zero-filled by contract
  }

  void free_bytes(void* p) noexcept override { std::free(p); }

  // Host "device" memory: both copies are memcpy (dst == src, possible here, would be memcpy UB).
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes > 0 && dst != src) std::memcpy(dst, src, bytes);
  }

  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes > 0 && dst != src) std::memcpy(dst, src, bytes);
  }

  void synchronize() override {}

 private:
  static void check_shape(std::int64_t rows, std::int64_t cols, const char* op) {
    MDDP_CHECK(rows >= 0 && cols >= 0, op << ": negative shape (" << rows << ", " << cols << ")");
  }

  CpuGemm gemm_mode_;
  int threads_;
  TaskPool pool_;  // FixedTiles: the GEMM tiles' threads (this one and threads_ - 1 workers)

  struct FreeDeleter {
    void operator()(float* p) const noexcept { std::free(p); }
  };
  // gemm_bf16's decoded operands (reserve_bf16_gemm).
  std::unique_ptr<float, FreeDeleter> bf16_a_, bf16_b_;
  std::int64_t bf16_reserved_ = 0;

  template <bool kRelu>
  static void bias_row(float* __restrict y, const float* __restrict bias, std::int64_t cols) {
    for (std::int64_t j = 0; j < cols; ++j) {
      const float t = y[j] + bias[j];
      y[j] = kRelu ? relu(t) : t;
    }
  }
};

}  // namespace

std::unique_ptr<Ops> make_cpu_ops(int blas_threads, CpuGemm gemm) { return std::make_unique<CpuOps>(blas_threads, gemm); }

}  // namespace microddp::kernels
