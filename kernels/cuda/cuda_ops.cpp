// cuda_ops.cpp — CudaOps: the Ops interface on one GPU (cuBLAS for GEMM, cuBLASLt for the GEMMs with
// a fused bias / ReLU / bias-gradient epilogue, kernels/cuda/*.cu for the rest). A fused call asks
// cuBLASLt's heuristic once per problem (outside captures; the answer is cached) and runs the
// unfused calls where cuBLASLt has no algorithm: the same results, never an error.
// Contract (see ops.hpp): row-major; backward ops accumulate; every call is queued on the
// object's own non-blocking stream (stream()) and returns at once; synchronize() waits for the
// stream and reports device-flagged errors (a softmax_xent label out of range). sum_squares and the
// host copies wait for the stream (they return a value or finished bytes); copy_to_host also reports
// the device-flagged errors, as synchronize() does. All scratch memory (cuBLAS workspace,
// softmax_xent and sum_squares scratch) and the pinned host mirrors are allocated in the
// constructor; only allocate_bytes allocates afterwards (cudaMalloc, zeroed on our stream). The
// stream is non-blocking (it does not wait for the legacy default stream): memory filled by other
// streams or by cudaMemcpy/cudaMemset must be synchronised (or enqueued on stream()) before
// these ops use it. The queued calls of a step (ops.hpp: pinned staging, async copies, sum_squares_to,
// step_numerics, mark) never wait; marks are timing events resolved on the host clock by a
// DeviceClock that synchronize() re-anchors. CUDA graphs (ops.hpp): the compute stream is captured in
// CUDA's thread-local mode (the input pipeline's thread is not held back); the calls that wait or
// allocate refuse to run during a capture, before touching the device; marks in a capture are external
// event records, so every replay records them; an executable graph per id, destroyed with the object.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/log.hpp"
#include "kernels/cuda/cublas_library.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/device_clock.hpp"
#include "kernels/cuda_kernels.hpp"
#include "kernels/ops.hpp"
#include "kernels/optimizer_kernels.hpp"

namespace microddp::kernels {

namespace {

// 32 MiB: NVIDIA's recommended cuBLAS workspace on Hopper (4 MiB suffices before it); giving it
// explicitly keeps cuBLAS from allocating on first use (our "no allocation in the step" rule).
constexpr std::size_t kCublasWorkspaceBytes = 32u << 20;

int cublas_int(std::int64_t v, const char* what) {
  MDDP_CHECK(v >= 0 && v <= INT_MAX, "gemm: " << what << " = " << v << " does not fit cuBLAS's int");
  return static_cast<int>(v);
}

class CudaOps final : public Ops {
 public:
  // cuBLAS is opened by the first CudaOps of the process (cublas_library.hpp): a process that never
  // asks for a GPU never loads it.
  CudaOps(int device, bool tf32) : device_(device), tf32_(tf32), blas_(cublas_library()), blas_lt_(cublaslt_library()) {
    const int count = cuda_device_count();
    MDDP_CHECK(device >= 0 && device < count, "CUDA device " << device << " requested, " << count << " visible");
    MDDP_CUDA_CHECK(cudaSetDevice(device_));
    // If a step below throws, the destructor does not run: release what was made so far by hand.
    try {
      MDDP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
      // The copy stream of upload_async: non-blocking too, so uploads overlap the compute stream.
      MDDP_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
      for (cudaEvent_t& e : upload_events_) MDDP_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      MDDP_CUBLAS_CHECK(blas_.create(&cublas_));
      MDDP_CUBLAS_CHECK(blas_.set_stream(cublas_, stream_));
      MDDP_CUDA_CHECK(cudaMalloc(&cublas_workspace_, kCublasWorkspaceBytes));
      MDDP_CUBLAS_CHECK(blas_.set_workspace(cublas_, cublas_workspace_, kCublasWorkspaceBytes));
      // Default math is full fp32; TF32 rounds GEMM inputs to a 10-bit mantissa on tensor cores.
      MDDP_CUBLAS_CHECK(blas_.set_math_mode(cublas_, tf32_ ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
      MDDP_CUBLAS_CHECK(blas_lt_.create(&cublas_lt_));
      MDDP_CUDA_CHECK(cudaMalloc(&xent_scratch_, gpu::softmax_xent_workspace_bytes()));
      MDDP_CUDA_CHECK(cudaMemset(xent_scratch_, 0, gpu::softmax_xent_workspace_bytes()));
      xent_ws_ = gpu::softmax_xent_workspace(xent_scratch_, gpu::softmax_xent_workspace_bytes());
      MDDP_CUDA_CHECK(cudaMallocHost(&host_flag_, sizeof(int)));
      *host_flag_ = 0;
      // sum_squares: pass-1 partials (written before they are read: no zeroing), the device result
      // and its pinned host mirror (so the read-back is a real async copy, as for the flag).
      MDDP_CUDA_CHECK(cudaMalloc(&sumsq_partials_, gpu::sum_squares_workspace_bytes()));
      MDDP_CUDA_CHECK(cudaMalloc(&sumsq_out_, sizeof(double)));
      MDDP_CUDA_CHECK(cudaMallocHost(&host_sumsq_, sizeof(double)));
      *host_sumsq_ = 0.0;
      marks_.resize(kMarkSlots, nullptr);
      for (cudaEvent_t& e : marks_) MDDP_CUDA_CHECK(cudaEventCreate(&e));  // with timing
      clock_ = std::make_unique<DeviceClock>();
      description_ = describe();
      // The memset above ran on the legacy default stream, which our non-blocking stream does not
      // wait for: finish it before any kernel can read the flag.
      MDDP_CUDA_CHECK(cudaDeviceSynchronize());
      clock_->anchor(stream_);  // idle now
    } catch (...) {
      release();
      throw;
    }
  }

  ~CudaOps() override {
    release_graphs();
    release();
  }
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  core::Device device() const override { return core::Device::Cuda; }
  std::string description() const override { return description_; }
  core::DeviceStream stream() const override { return core::DeviceStream(stream_); }
  std::unique_ptr<OptimizerKernels> make_optimizer_kernels() override { return make_cuda_optimizer_kernels(stream()); }
  // NVTX v3 (header-only; it loads the profiler's injection library only when a tool such as nsys
  // is attached, otherwise each call is a check of a null function pointer).
  void range_push(const char* name) override { nvtxRangePushA(name); }
  void range_pop() override { nvtxRangePop(); }

  // The GEMM shapes cuBLAS never sees: an empty C (nothing to do) and k = 0 (C = beta * C, queued
  // here so no empty-operand edge case reaches cuBLAS). True when the call is done. Checks that the
  // sizes fit cuBLAS's int first, as the real call would.
  bool gemm_is_trivial(std::int64_t m, std::int64_t n, std::int64_t k, float beta, float* c) {
    const int mi = cublas_int(m, "m"), ni = cublas_int(n, "n"), ki = cublas_int(k, "k");
    if (mi == 0 || ni == 0) return true;
    if (ki != 0) return false;
    if (beta == 0.0f) {
      gpu::zero(c, m * n, stream_);
    } else if (beta != 1.0f) {
      gpu::scale(c, beta, m * n, stream_);
    }
    return true;
  }

  // Row-major GEMM on column-major cuBLAS. A row-major (r, c) matrix is, byte for byte, the
  // column-major (c, r) matrix of its transpose. So instead of C = op(A) op(B) we ask cuBLAS for
  // C^T = op(B)^T op(A)^T, i.e. swap the operands (B first), keep each operand's own transpose flag,
  // and swap m and n; the column-major (n, m) result C^T is exactly row-major C. Leading dimensions
  // are the row lengths of the row-major arrays as stored.
  void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
            const float* b, float beta, float* c) override {
    if (gemm_is_trivial(m, n, k, beta, c)) return;
    const int mi = cublas_int(m, "m"), ni = cublas_int(n, "n"), ki = cublas_int(k, "k");
    const int lda = cublas_int(trans_a ? m : k, "lda");
    const int ldb = cublas_int(trans_b ? k : n, "ldb");
    MDDP_CUBLAS_CHECK(blas_.sgemm(cublas_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, ni,
                                  mi, ki, &alpha, b, ldb, a, lda, &beta, c, ni));
  }

  // gemm's operand swap with bf16 operands on tensor cores: compute type 32F keeps the products and
  // sums in fp32 (the CPU reference's arithmetic); C stays fp32. The math mode (tf32) does not apply
  // to bf16 operands.
  void gemm_bf16(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const std::uint16_t* a, const std::uint16_t* b, float beta, float* c) override {
    if (gemm_is_trivial(m, n, k, beta, c)) return;
    const int mi = cublas_int(m, "m"), ni = cublas_int(n, "n"), ki = cublas_int(k, "k");
    const int lda = cublas_int(trans_a ? m : k, "lda");
    const int ldb = cublas_int(trans_b ? k : n, "ldb");
    MDDP_CUBLAS_CHECK(blas_.gemm_ex(cublas_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    ni, mi, ki, &alpha, b, CUDA_R_16BF, ldb, a, CUDA_R_16BF, lda, &beta, c,
                                    CUDA_R_32F, ni, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // ---- fused GEMM + epilogue: one cublasLtMatmul each (ops.hpp; docs/gpu.md "Fewer, fatter kernels") ----
  // Row-major to column-major as in gemm(): row-major C(m, n) = op(A) op(B) is column-major
  // C^T(n, m) = op(B)^T op(A)^T, so cuBLASLt's "A" is our b, its "B" our a, its (m, n) our (n, m).
  //
  // Forward, CUBLASLT_EPILOGUE_BIAS / RELU_BIAS: the epilogue adds a vector "whose length must match
  // matrix D rows", broadcast over D's columns, then (RELU_BIAS) applies ReLU. D's rows are our n, the
  // columns of row-major C: exactly our bias(n) broadcast over C's rows, then act. Same arithmetic as
  // gemm + bias_act_forward (fp32 sum, + bias, max(., 0)).
  // When cuBLASLt has no algorithm for the problem (lt_matmul), the unfused calls, same arithmetic.
  void gemm_bias_act(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                     const float* b, const float* bias, float* c, bool relu) override {
    if (lt_matmul(trans_a, trans_b, m, n, k, a, b, CUDA_R_32F, c,
                  relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS, bias))
      return;
    gemm(trans_a, trans_b, m, n, k, 1.0f, a, b, 0.0f, c);
    bias_act_forward(c, bias, m, n, relu);
  }
  // bf16 operands, fp32 bias and D (the bias type defaults to D's): cuBLASLt's bf16 path takes the
  // same epilogues, so --precision bf16's forward is fused too.
  void gemm_bias_act_bf16(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                          const std::uint16_t* a, const std::uint16_t* b, const float* bias, float* c,
                          bool relu) override {
    if (lt_matmul(trans_a, trans_b, m, n, k, a, b, CUDA_R_16BF, c,
                  relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS, bias))
      return;
    gemm_bf16(trans_a, trans_b, m, n, k, 1.0f, a, b, 0.0f, c);
    bias_act_forward(c, bias, m, n, relu);
  }
  // Backward, BGRADB. Row-major dw(out, in) = dy(rows, out)^T x(rows, in) is gemm(trans_a = true,
  // trans_b = false, m = out, n = in, k = rows, a = dy, b = x). Swapped for cuBLASLt: its A = x (stored
  // column-major (in, rows), ld in, TRANSA = N), its B = dy (stored column-major (out, rows), ld out,
  // TRANSB = T, so op(B) is (rows, out) with op(B)(r, j) = dy(r, j)), m = in, n = out, k = rows; D is
  // column-major (in, out) = row-major dw. The documented epilogues: BGRADA reduces op(A) over k into
  // a vector of D's ROWS (length in: a sum over rows of x — not ours); BGRADB reduces op(B) over k into
  // a vector of D's COLUMNS: db(j) = sum_r op(B)(r, j) = sum over rows of dy(., j), length out. So
  // BGRADB. (In row-major words: the bias gradient of our A operand is cuBLASLt's B's.)
  // Accumulation: the epilogue WRITES the bias gradient (beta scales C only), while Ops backward
  // accumulates. With accumulate the fused call would need a scratch vector plus an add kernel, as
  // many launches as the separate bias_grad kernel that adds in place; so accumulate (gradient
  // accumulation micro-steps, not the default step) takes the unfused bias_grad + GEMM(beta = 1).
  void gemm_bias_grad(std::int64_t out, std::int64_t in, std::int64_t rows, const float* dy, const float* x, float* dw,
                      float* db, bool accumulate) override {
    if (!accumulate && lt_matmul(true, false, out, in, rows, dy, x, CUDA_R_32F, dw, CUBLASLT_EPILOGUE_BGRADB, db))
      return;
    if (!accumulate) zero(db, out);
    bias_grad(db, dy, rows, out);
    gemm(true, false, out, in, rows, 1.0f, dy, x, accumulate ? 1.0f : 0.0f, dw);
  }

  void bias_act_forward(float* y, const float* bias, std::int64_t rows, std::int64_t cols, bool relu) override {
    gpu::bias_act_forward(y, bias, rows, cols, relu, stream_);
  }
  void relu_backward(float* dy, const float* y, std::int64_t count) override {
    gpu::relu_backward(dy, y, count, stream_);
  }
  void bias_grad(float* db, const float* dy, std::int64_t rows, std::int64_t cols) override {
    gpu::bias_grad(db, dy, rows, cols, stream_);
  }
  void softmax_xent(const float* logits, const std::int32_t* labels, std::int64_t rows, std::int64_t classes,
                    float scale, float* dlogits, float* loss_out) override {
    gpu::softmax_xent(logits, labels, rows, classes, scale, dlogits, loss_out, xent_ws_, stream_);
  }
  void scale(float* x, float alpha, std::int64_t n) override { gpu::scale(x, alpha, n, stream_); }
  void axpy(float alpha, const float* x, float* y, std::int64_t n) override { gpu::axpy(alpha, x, y, n, stream_); }
  void encode_wire16(Wire16 f, const float* src, std::uint16_t* dst, float* residual, std::int64_t n) override {
    gpu::encode_wire16(f, src, dst, residual, n, stream_);
  }
  void decode_wire16(Wire16 f, const std::uint16_t* src, float* dst, std::int64_t n) override {
    gpu::decode_wire16(f, src, dst, n, stream_);
  }
  void zero(float* x, std::int64_t n) override { gpu::zero(x, n, stream_); }
  void copy(float* dst, const float* src, std::int64_t n) override { gpu::copy(dst, src, n, stream_); }
  void synthetic_rows(const SyntheticSpec& spec, std::int64_t first, std::int64_t count, float* x,
                      std::int32_t* y) override {
    gpu::synthetic_rows(spec, first, count, x, y, stream_);
  }

  double sum_squares(const float* x, std::int64_t n) override {
    refuse_while_capturing("sum_squares");
    gpu::sum_squares(x, n, sumsq_partials_, sumsq_out_, stream_);
    MDDP_CUDA_CHECK(cudaMemcpyAsync(host_sumsq_, sumsq_out_, sizeof(double), cudaMemcpyDeviceToHost, stream_));
    MDDP_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return *host_sumsq_;
  }

  void* allocate_bytes(std::size_t bytes) override {
    refuse_while_capturing("allocate_bytes");
    if (bytes == 0) return nullptr;
    // cudaMalloc allocates on the calling thread's current device, which another library may have
    // changed since the constructor.
    MDDP_CUDA_CHECK(cudaSetDevice(device_));
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
      // An out-of-memory error is not sticky, but cudaGetLastError() would still return it and a
      // later launch check would blame an innocent kernel: clear it before reporting.
      (void)cudaGetLastError();
      std::ostringstream os;
      os << "CUDA error " << cudaGetErrorName(err) << ": " << cudaGetErrorString(err) << " (allocate_bytes of " << bytes
         << " bytes on GPU " << device_ << ")";
      core::throw_error(os.str(), "cudaMalloc(&p, bytes)", __FILE__, __LINE__);
    }
    try {
      // Zeroed on our stream and waited for: cudaMemset (legacy stream) would not be ordered before
      // our non-blocking stream's work, and the caller may use the memory from any stream.
      MDDP_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_));
      MDDP_CUDA_CHECK(cudaStreamSynchronize(stream_));
    } catch (...) {
      (void)cudaFree(p);
      throw;
    }
    return p;
  }

  void free_bytes(void* p) noexcept override {
    if (p == nullptr) return;
    // Work queued on our stream may still read or write p; cudaFree of cudaMalloc memory also waits
    // for the device, but waiting on our stream first makes the contract explicit.
    (void)cudaStreamSynchronize(stream_);
    const cudaError_t err = cudaFree(p);
    if (err != cudaSuccess) {
      // This runs in destructors (noexcept): warn instead of throwing, and clear a non-sticky error
      // so the next launch check does not blame an innocent kernel. Once per CudaOps: after a sticky
      // error (a faulted kernel) every buffer's free fails the same way.
      (void)cudaGetLastError();
      if (!free_warned_) {
        free_warned_ = true;
        try {
          MDDP_WARN("free_bytes: cudaFree on GPU " << device_ << " failed: " << cudaGetErrorName(err) << ": "
                                                   << cudaGetErrorString(err));
        } catch (...) {  // out of memory while formatting the warning: nothing more to do
        }
      }
    }
  }

  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    refuse_while_capturing("copy_from_host");
    if (bytes == 0) return;
    MDDP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    // Returns when the bytes have landed (the contract): src may be reused at once.
    MDDP_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    refuse_while_capturing("copy_to_host");
    if (bytes == 0) return;
    MDDP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    // Host code is about to read what the GPU computed: report a device-flagged error now, as
    // synchronize() would, instead of letting a NaN loss be read silently.
    wait_and_check_flag();
  }

  void synchronize() override {
    refuse_while_capturing("synchronize");
    wait_and_check_flag();
    clock_->anchor(stream_);  // the stream is idle: a fresh anchor for the marks that follow
  }

  // ---- the queued calls of a step (ops.hpp) ----
  void* allocate_host_bytes(std::size_t bytes) override {
    refuse_while_capturing("allocate_host_bytes");
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    // Portable: pinned for every device, so a staging buffer works whichever GPU copies from it.
    MDDP_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    std::memset(p, 0, bytes);
    return p;
  }
  void free_host_bytes(void* p) noexcept override {
    if (p == nullptr) return;
    (void)cudaStreamSynchronize(stream_);  // a queued copy may still read or write it
    (void)cudaStreamSynchronize(copy_stream_);
    (void)cudaFreeHost(p);
  }
  void copy_from_host_async(void* dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) MDDP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  }
  void copy_to_host_async(void* dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) MDDP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  }
  void upload_async(int slot, void* dst, const void* src, std::size_t bytes) override {
    MDDP_CHECK(slot >= 0 && slot < kUploadSlots, "upload slot " << slot << " out of range [0, " << kUploadSlots << ")");
    if (bytes > 0) MDDP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy_stream_));
    MDDP_CUDA_CHECK(cudaEventRecord(upload_events_[static_cast<std::size_t>(slot)], copy_stream_));
  }
  void wait_for_upload(int slot) override {
    MDDP_CHECK(slot >= 0 && slot < kUploadSlots, "upload slot " << slot << " out of range [0, " << kUploadSlots << ")");
    MDDP_CUDA_CHECK(cudaStreamWaitEvent(stream_, upload_events_[static_cast<std::size_t>(slot)], 0));
  }
  void sum_squares_to(const float* x, std::int64_t n, double* out) override {
    gpu::sum_squares(x, n, sumsq_partials_, out, stream_);
  }
  void step_numerics(const float* losses, std::int64_t k, const double* grad_sumsq, StepVerdict* out) override {
    gpu::step_numerics(losses, k, grad_sumsq, out, stream_);
  }
  std::uint32_t mark() override {
    // Marks a live graph records at each replay are its own: the ring skips them, or an eager mark
    // would re-record the event between a replay and the read of its time.
    std::uint32_t id = next_mark_++ % kMarkSlots;
    for (std::uint32_t tries = 0; mark_graph_[id] != 0; ++tries) {
      MDDP_CHECK(tries < kMarkSlots, "mark: all " << kMarkSlots << " marks of GPU " << device_ << " belong to graphs");
      id = next_mark_++ % kMarkSlots;
    }
    if (capturing_) mark_graph_[id] = kCapturePending;
    // In a capture, an external record: a node that records the event at every replay (a plain record
    // would only order the capture's streams, and the event could not be timed).
    MDDP_CUDA_CHECK(
        cudaEventRecordWithFlags(marks_[id], stream_, capturing_ ? cudaEventRecordExternal : cudaEventRecordDefault));
    return id;
  }
  std::int64_t mark_ns(std::uint32_t id) const override {
    MDDP_CHECK(id < kMarkSlots, "mark id " << id << " out of range");
    return clock_->host_ns(marks_[id]);
  }

  // ---- CUDA graphs (ops.hpp) ----
  bool supports_graphs() const override { return true; }
  bool capturing() const override { return capturing_; }
  void begin_capture() override {
    MDDP_CHECK(!capturing_, "begin_capture: a capture of GPU " << device_ << "'s compute stream is already open");
    MDDP_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    capturing_ = true;
  }
  GraphId end_capture() override {
    MDDP_CHECK(capturing_, "end_capture without begin_capture");
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    const cudaError_t err = cudaStreamEndCapture(stream_, &graph);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: the stream is usable again, later checks must not see it
      free_marks_of(kCapturePending);
      std::ostringstream os;
      os << "end_capture on GPU " << device_ << ": CUDA error " << cudaGetErrorName(err) << ": "
         << cudaGetErrorString(err)
         << " (a call during the capture was refused: CUDA cannot record host waits, allocations, copies of "
            "pageable memory, or work on other streams that was not joined back through events)";
      core::throw_error(os.str(), "cudaStreamEndCapture(stream_, &graph)", __FILE__, __LINE__);
    }
    cudaGraphExec_t exec = nullptr;
    // Node priorities kept: without the flag a graph launches every node at the launch stream's
    // priority, and the NCCL kernels forked from the communication stream (the highest priority, so
    // they run ahead of queued backward kernels) would lose it inside the graph.
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority);
    (void)cudaGraphDestroy(graph);  // the executable graph holds what it needs
    if (instantiated != cudaSuccess) free_marks_of(kCapturePending);
    MDDP_CUDA_CHECK(instantiated);
    graphs_.push_back(exec);
    const auto id = static_cast<GraphId>(graphs_.size());
    for (GraphId& owner : mark_graph_) owner = owner == kCapturePending ? id : owner;
    return id;
  }
  void launch_graph(GraphId graph) override { MDDP_CUDA_CHECK(cudaGraphLaunch(graph_exec(graph), stream_)); }
  void destroy_graph(GraphId graph) noexcept override {
    if (graph == 0 || graph > graphs_.size() || graphs_[graph - 1] == nullptr) return;
    (void)cudaGraphExecDestroy(graphs_[graph - 1]);
    graphs_[graph - 1] = nullptr;
    free_marks_of(graph);
  }
  void abort_capture() noexcept override {
    if (!capturing_) return;
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess && graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    free_marks_of(kCapturePending);
  }

 private:
  // Waits for the stream and reports (once) an error that a kernel flagged on the device.
  void wait_and_check_flag() {
    // Read the flag behind all queued work, then reset it so one bad batch is reported once.
    MDDP_CUDA_CHECK(cudaMemcpyAsync(host_flag_, xent_ws_.error_flag, sizeof(int), cudaMemcpyDeviceToHost, stream_));
    MDDP_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (*host_flag_ != 0) {
      *host_flag_ = 0;
      MDDP_CUDA_CHECK(cudaMemsetAsync(xent_ws_.error_flag, 0, sizeof(int), stream_));
      MDDP_CHECK(false,
                 "softmax_xent: a label was outside [0, classes) (detected on GPU " << device_ << "; loss is NaN)");
    }
  }

  // The fused calls need every dimension > 1: an empty operand or k = 0 is the unfused calls' edge
  // case, and a dimension of 1 (a one-row local batch) is one cuBLASLt's heuristic may reject
  // (PyTorch's addmm takes cuBLASLt only when both operands have more than one row and column, after
  // cublasLtMatmulAlgoGetHeuristic returned CUBLAS_STATUS_INVALID_VALUE for such shapes).
  static bool lt_fusable(std::int64_t m, std::int64_t n, std::int64_t k) {
    return cublas_int(m, "m") > 1 && cublas_int(n, "n") > 1 && cublas_int(k, "k") > 1;
  }

  // The alignment cuBLASLt is promised for a pointer (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES): its
  // largest power-of-two divisor, at most 256 (the default, which cudaMalloc's base addresses meet
  // but a layer's slice of the flat buffers need not).
  static std::uint32_t alignment_of(const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    std::uint32_t align = 1;
    while (align < 256 && (a & align) == 0) align <<= 1;
    return align;
  }

  // One fused problem as cuBLASLt sees it (our row-major names; tf32 is fixed per CudaOps), with the
  // operands' alignments: what the heuristic's answer depends on.
  struct LtKey {
    std::uint32_t epilogue;
    bool trans_a, trans_b;
    std::int64_t m, n, k;
    cudaDataType ab_type;
    std::array<std::uint32_t, 3> align;  // a, b, c (c is also D: in place)
    bool operator==(const LtKey&) const = default;
  };
  // cuBLASLt's answer for one problem: an algorithm, or none (the unfused calls run instead).
  struct LtPlan {
    LtKey key;
    bool fused;
    cublasLtMatmulAlgo_t algo;
  };

  // The plan for `key`: asked of cublasLtMatmulAlgoGetHeuristic once (with the workspace we really
  // give it and the operands' real alignments), then cached for the life of this object, so a step
  // pays no heuristic and a graph replays what an eager step ran. Never asked during a capture (only
  // calls that queue work are recorded, and the capture must run what the eager step ran): a problem
  // first met there runs unfused and is not cached; the trainer's warm-up step meets every problem
  // first. nullptr: run unfused.
  const LtPlan* lt_plan(const LtKey& key, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                        cublasLtMatrixLayout_t d) {
    for (const LtPlan& p : lt_plans_) {
      if (p.key == key) return p.fused ? &p : nullptr;
    }
    if (capturing_) return nullptr;
    cublasLtMatmulPreferenceOpaque_t pref_space{};
    const cublasLtMatmulPreference_t pref = &pref_space;
    MDDP_CUBLAS_CHECK(blas_lt_.preference_init(pref, sizeof pref_space));
    // The whole cuBLAS workspace (the library's default preference is 0 bytes: no split-K).
    const std::uint64_t workspace = kCublasWorkspaceBytes;
    MDDP_CUBLAS_CHECK(blas_lt_.preference_set_attribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                        sizeof workspace));
    // cuBLASLt's A is our b, its B our a; C and D are our c.
    const std::array<std::uint32_t, 4> align = {key.align[1], key.align[0], key.align[2], key.align[2]};
    const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; ++i) {
      MDDP_CUBLAS_CHECK(
          blas_lt_.preference_set_attribute(pref, align_attr[i], &align[static_cast<std::size_t>(i)], sizeof align[0]));
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = blas_lt_.algo_get_heuristic(cublas_lt_, desc, a, b, d, d, pref, 1, &result, &found);
    LtPlan plan{key, false, {}};
    if (st == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS &&
        result.workspaceSize <= kCublasWorkspaceBytes) {
      plan.fused = true;
      plan.algo = result.algo;
    } else if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED && st != CUBLAS_STATUS_INVALID_VALUE) {
      MDDP_CUBLAS_CHECK(st);
    } else {
      note_lt_refusal(key, st == CUBLAS_STATUS_SUCCESS ? "the heuristic found no algorithm" : blas_.status_name(st));
    }
    lt_plans_.push_back(plan);
    return plan.fused ? &lt_plans_.back() : nullptr;
  }

  // Once per problem, on the log: the run goes on unfused (the same arithmetic, more kernels).
  void note_lt_refusal(const LtKey& key, const char* why) const {
    const char* epilogue = key.epilogue == CUBLASLT_EPILOGUE_BGRADB      ? "BGRADB"
                           : key.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ? "RELU_BIAS"
                                                                         : "BIAS";
    MDDP_INFO("cuBLASLt on GPU " << device_ << " has no algorithm for " << epilogue << " "
                                 << (key.ab_type == CUDA_R_16BF ? "bf16"
                                     : tf32_                    ? "tf32"
                                                                : "fp32")
                                 << " (m " << key.m << ", n " << key.n << ", k " << key.k
                                 << ", row-major; a, b, c aligned to " << key.align[0] << ", " << key.align[1] << ", "
                                 << key.align[2] << " bytes; " << why
                                 << "): that GEMM runs unfused (cuBLAS and our bias kernels)");
  }

  // One cublasLtMatmul on the compute stream: row-major C(m, n) = op(A) op(B) (beta = 0, D = C in
  // place) with `epilogue` reading or writing `vector` (a bias, or a bias gradient), operands swapped
  // as in gemm(). Compute type 32F (bf16 operands: fp32 products and sums, as gemm_bf16), or
  // 32F_FAST_TF32 with --tf32 for fp32 operands (the math mode of the cuBLAS handle does not reach
  // cuBLASLt: the descriptor says it). The descriptors are initialised on the stack (nothing is
  // allocated) and only read by the call; the algorithm is the cached heuristic's (lt_plan), the
  // workspace cuBLAS's, used in stream order. Returns false, having queued nothing, when the problem
  // is not fusable or cuBLASLt has no algorithm for it (the caller then runs the unfused calls).
  bool lt_matmul(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                 const void* b, cudaDataType ab_type, float* c, cublasLtEpilogue_t epilogue, const void* vector) {
    if (!lt_fusable(m, n, k)) return false;
    const int mi = cublas_int(m, "m"), ni = cublas_int(n, "n");
    const std::int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;  // row lengths as stored
    const cublasComputeType_t compute =
        ab_type == CUDA_R_32F && tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasLtMatmulDescOpaque_t desc_space{};
    const cublasLtMatmulDesc_t desc = &desc_space;
    MDDP_CUBLAS_CHECK(blas_lt_.matmul_desc_init(desc, sizeof desc_space, compute, CUDA_R_32F));
    const std::int32_t op_a = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A is our b
    const std::int32_t op_b = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto ep = static_cast<std::uint32_t>(epilogue);
    MDDP_CUBLAS_CHECK(blas_lt_.matmul_desc_set_attribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
    MDDP_CUBLAS_CHECK(blas_lt_.matmul_desc_set_attribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));
    MDDP_CUBLAS_CHECK(blas_lt_.matmul_desc_set_attribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
    MDDP_CUBLAS_CHECK(
        blas_lt_.matmul_desc_set_attribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector, sizeof vector));
    // Layouts of the matrices as stored (column-major): cuBLASLt's A (our b) is (ldb, rows of our
    // b), its B (our a) is (lda, rows of our a), D is (n, m).
    cublasLtMatrixLayoutOpaque_t a_space{}, b_space{}, d_space{};
    MDDP_CUBLAS_CHECK(blas_lt_.matrix_layout_init(&a_space, sizeof a_space, ab_type, static_cast<std::uint64_t>(ldb),
                                                  static_cast<std::uint64_t>(trans_b ? n : k), ldb));
    MDDP_CUBLAS_CHECK(blas_lt_.matrix_layout_init(&b_space, sizeof b_space, ab_type, static_cast<std::uint64_t>(lda),
                                                  static_cast<std::uint64_t>(trans_a ? k : m), lda));
    MDDP_CUBLAS_CHECK(blas_lt_.matrix_layout_init(&d_space, sizeof d_space, CUDA_R_32F, static_cast<std::uint64_t>(ni),
                                                  static_cast<std::uint64_t>(mi), ni));
    const LtKey key{ep, trans_a, trans_b, m, n, k, ab_type, {alignment_of(a), alignment_of(b), alignment_of(c)}};
    const LtPlan* plan = lt_plan(key, desc, &a_space, &b_space, &d_space);
    if (plan == nullptr) return false;
    const float alpha = 1.0f, beta = 0.0f;
    const cublasStatus_t st = blas_lt_.matmul(cublas_lt_, desc, &alpha, b, &a_space, a, &b_space, &beta, c, &d_space, c,
                                              &d_space, &plan->algo, cublas_workspace_, kCublasWorkspaceBytes, stream_);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) {  // the algorithm's kernel refused after all: unfused from now on
      for (LtPlan& p : lt_plans_) p.fused = p.fused && !(p.key == key);
      note_lt_refusal(key, "cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED");
      return false;
    }
    MDDP_CUBLAS_CHECK(st);
    return true;
  }

  std::string describe() const {
    int version = 0;
    MDDP_CUBLAS_CHECK(blas_.get_version(cublas_, &version));
    std::ostringstream os;
    // cuBLAS encodes its version as major * 10000 + minor * 100 + patch (CUDA 12+).
    os << "cuda:" << device_ << " (" << cuda_device_description(device_) << ", cuBLAS " << version / 10000 << "."
       << (version % 10000) / 100 << "." << version % 100 << ", tf32 " << (tf32_ ? "on" : "off") << ")";
    return os.str();
  }

  // A call that waits for the device or allocates cannot be recorded: refused before CUDA sees it.
  void refuse_while_capturing(const char* what) const {
    MDDP_CHECK(!capturing_, what << " on GPU " << device_
                                 << " while its compute stream is being captured into a CUDA graph: only calls that "
                                    "queue work can be recorded (ops.hpp); end_capture() or abort_capture() first");
  }
  cudaGraphExec_t graph_exec(GraphId graph) const {
    MDDP_CHECK(graph > 0 && graph <= graphs_.size() && graphs_[graph - 1] != nullptr,
               "launch_graph: no graph " << graph << " on GPU " << device_ << " (never made, or destroyed)");
    return graphs_[graph - 1];
  }
  void free_marks_of(GraphId owner) noexcept {
    for (GraphId& g : mark_graph_) g = g == owner ? 0 : g;
  }
  void release_graphs() noexcept {
    abort_capture();
    for (GraphId g = 1; g <= graphs_.size(); ++g) destroy_graph(g);
  }

  // No throwing here (destructor path); errors at teardown have nowhere useful to go.
  void release() noexcept {
    if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
    if (copy_stream_ != nullptr) (void)cudaStreamSynchronize(copy_stream_);
    for (cudaEvent_t& e : upload_events_) {
      if (e != nullptr) (void)cudaEventDestroy(e);
      e = nullptr;
    }
    for (cudaEvent_t e : marks_) {
      if (e != nullptr) (void)cudaEventDestroy(e);
    }
    marks_.clear();
    clock_.reset();
    if (host_sumsq_ != nullptr) (void)cudaFreeHost(host_sumsq_);
    if (sumsq_out_ != nullptr) (void)cudaFree(sumsq_out_);
    if (sumsq_partials_ != nullptr) (void)cudaFree(sumsq_partials_);
    if (host_flag_ != nullptr) (void)cudaFreeHost(host_flag_);
    if (xent_scratch_ != nullptr) (void)cudaFree(xent_scratch_);
    if (cublas_lt_ != nullptr) (void)blas_lt_.destroy(cublas_lt_);
    if (cublas_ != nullptr) (void)blas_.destroy(cublas_);
    if (cublas_workspace_ != nullptr) (void)cudaFree(cublas_workspace_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
    if (copy_stream_ != nullptr) (void)cudaStreamDestroy(copy_stream_);
    copy_stream_ = nullptr;
    host_sumsq_ = nullptr;
    sumsq_out_ = nullptr;
    sumsq_partials_ = nullptr;
    host_flag_ = nullptr;
    xent_scratch_ = nullptr;
    cublas_ = nullptr;
    cublas_lt_ = nullptr;
    cublas_workspace_ = nullptr;
    stream_ = nullptr;
  }

  int device_;
  bool tf32_;
  const CublasLibrary& blas_;       // the entry points of cuBLAS, loaded on first use
  const CublasLtLibrary& blas_lt_;  // and of cuBLASLt (the fused GEMM epilogues)
  cudaStream_t stream_ = nullptr;
  cudaStream_t copy_stream_ = nullptr;                     // upload_async's copies
  std::array<cudaEvent_t, kUploadSlots> upload_events_{};  // the end of each slot's last upload
  cublasHandle_t cublas_ = nullptr;
  cublasLtHandle_t cublas_lt_ = nullptr;
  void* cublas_workspace_ = nullptr;
  void* xent_scratch_ = nullptr;
  gpu::XentWorkspace xent_ws_{};
  int* host_flag_ = nullptr;          // pinned, so the flag read-back is a real async copy
  double* sumsq_partials_ = nullptr;  // gpu::sum_squares_workspace_bytes(): pass-1 block partials
  double* sumsq_out_ = nullptr;       // one device double: the sum_squares result
  double* host_sumsq_ = nullptr;      // pinned mirror of sumsq_out_
  bool free_warned_ = false;          // free_bytes has reported a cudaFree failure
  std::vector<cudaEvent_t> marks_;    // kMarkSlots timing events: mark() records them in turn
  std::uint32_t next_mark_ = 0;
  // Per mark: the graph that records it at each replay (0: none; kCapturePending: the open capture's).
  static constexpr GraphId kCapturePending = ~GraphId{0};
  std::array<GraphId, kMarkSlots> mark_graph_{};
  std::unique_ptr<DeviceClock> clock_;  // marks -> host times; anchored at every synchronize()
  std::string description_;
  bool capturing_ = false;               // the compute stream is being captured (begin_capture)
  std::vector<LtPlan> lt_plans_;         // cuBLASLt's answer per fused problem (lt_plan); grows in warm-up
  std::vector<cudaGraphExec_t> graphs_;  // GraphId - 1 -> executable graph; null once destroyed
};

}  // namespace

std::unique_ptr<Ops> make_cuda_ops(int device, bool tf32) { return std::make_unique<CudaOps>(device, tf32); }

}  // namespace microddp::kernels
