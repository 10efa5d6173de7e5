// ops.hpp — the compute interface of microddp: everything the model and optimizers run.
// Contract:
//   * Matrices are row-major; shapes are given at each method. Pointers live on device().
//   * Backward ops ACCUMULATE into gradient buffers (gemm with beta = 1, bias_grad +=), so that
//     gradient accumulation over micro-steps needs no extra buffers; the caller zeroes gradients.
//   * Calls are ordered: on CUDA they are queued on the ops' compute stream; on the CPU they run
//     immediately. synchronize() waits for everything issued so far.
//   * No method allocates after construction (workspaces are sized up front).
// Implementations: CpuOps (OpenBLAS + loops, always built) and CudaOps (cuBLAS, cuBLASLt for the fused
// GEMM epilogues, custom kernels).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.hpp"
#include "kernels/elementwise.hpp"

namespace microddp::kernels {

struct SyntheticSpec;  // kernels/synthetic_data.hpp

class Ops {
 public:
  virtual ~Ops() = default;
  virtual core::Device device() const = 0;
  virtual std::string description() const = 0;  // e.g. "cpu (OpenBLAS 0.3.21, 1 thread)"

  // C(m, n) = alpha * op(A) * op(B) + beta * C, row-major.
  // op(A) is (m, k): A is (m, k) or, if trans_a, (k, m). op(B) is (k, n): B is (k, n) or (n, k).
  virtual void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                    const float* a, const float* b, float beta, float* c) = 0;

  // The same GEMM with bfloat16 operands (--precision bf16, core/precision.hpp): A and B hold bf16
  // bit patterns (elementwise.hpp's float_to_bf16_bits; make them with encode_wire16(Wire16::BF16)),
  // every product is exact in fp32 and the sums are fp32, as are alpha, beta and C. CudaOps runs it
  // on bf16 tensor cores (cublasGemmEx, compute type 32F); CpuOps decodes the operands (exactly) and
  // calls sgemm: the reference the GPU is tested against (the two differ only in summation order).
  // CpuOps decodes into workspace reserved up front: call reserve_bf16_gemm at set-up.
  virtual void gemm_bf16(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                         const std::uint16_t* a, const std::uint16_t* b, float beta, float* c) = 0;
  // Workspace for gemm_bf16 operands of up to `elements` elements each (CpuOps: two float arrays,
  // grown here and never in gemm_bf16, which refuses a larger operand; CudaOps needs none).
  virtual void reserve_bf16_gemm(std::int64_t /*elements*/) {}

  // ---- fused GEMM + epilogue: one call where the model used to make two or three ----
  // (docs/gpu.md, "Fewer, fatter kernels": on CudaOps one cublasLtMatmul with an epilogue instead of a
  // GEMM and separate bias / bias-gradient kernels; a launch-bound step makes fewer launches.) CpuOps
  // runs exactly the unfused sequence given with each, so it is the bitwise reference.
  //
  // C(m, n) = act(op(A) op(B) + bias), bias(n) broadcast over the rows of C, act = ReLU if relu.
  // Overwrites C (a forward layer). Unfused: gemm(trans_a, trans_b, m, n, k, 1, a, b, 0, c) then
  // bias_act_forward(c, bias, m, n, relu).
  virtual void gemm_bias_act(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                             const float* b, const float* bias, float* c, bool relu) = 0;
  // The same with bf16 operands (gemm_bf16's arithmetic: fp32 products and sums, fp32 bias and C).
  // Unfused: gemm_bf16(trans_a, trans_b, m, n, k, 1, a, b, 0, c) then bias_act_forward(...).
  virtual void gemm_bias_act_bf16(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                                  const std::uint16_t* a, const std::uint16_t* b, const float* bias, float* c,
                                  bool relu) = 0;
  // A linear layer's weight and bias gradients from its output gradient dy(rows, out) and its input
  // x(rows, in): dw(out, in) = dy^T x and db(out) = sum over rows of dy. accumulate = false
  // overwrites dw and db; true adds to them (the contract above: gradient accumulation).
  // Unfused: (accumulate ? nothing : zero(db, out)), bias_grad(db, dy, rows, out), then
  // gemm(true, false, out, in, rows, 1, dy, x, accumulate ? 1 : 0, dw).
  virtual void gemm_bias_grad(std::int64_t out, std::int64_t in, std::int64_t rows, const float* dy, const float* x,
                              float* dw, float* db, bool accumulate) = 0;

  // y(rows, cols) = act(y + bias) with bias(cols) broadcast over rows; act = ReLU if relu else id.
  virtual void bias_act_forward(float* y, const float* bias, std::int64_t rows, std::int64_t cols, bool relu) = 0;

  // dy(count) = relu_backward(dy, y) element-wise, in place (y is the ReLU output).
  virtual void relu_backward(float* dy, const float* y, std::int64_t count) = 0;

  // db(cols) += sum over rows of dy(rows, cols).
  virtual void bias_grad(float* db, const float* dy, std::int64_t rows, std::int64_t cols) = 0;

  // Softmax cross-entropy on logits(rows, classes) with labels(rows) in [0, classes):
  //   loss_out[0]   = scale * sum_i -log softmax(logits_i)[label_i]       (overwritten)
  //   dlogits(i, j) = scale * (softmax(logits_i)_j - [j == label_i])      (overwritten)
  // scale = 1 / GLOBAL batch size, so per-rank losses and gradients SUM to the global ones.
  // Numerically stable (max subtracted). A label outside [0, classes) is an error.
  virtual void softmax_xent(const float* logits, const std::int32_t* labels, std::int64_t rows, std::int64_t classes,
                            float scale, float* dlogits, float* loss_out) = 0;

  // One fused pass of Adam/AdamW over n elements: p, m, v updated in place from g. When p_bf16 is not
  // null, p_bf16(n) = the updated p rounded to bf16 (elementwise.hpp's float_to_bf16_bits) in the same
  // pass: --precision bf16's copy of the weights for the GEMMs, made where the weights are written
  // instead of by a rounding pass of its own (which would read all of p again).
  virtual void adam_step(const AdamParams& params, float* p, const float* g, float* m, float* v, std::int64_t n,
                         std::uint16_t* p_bf16) = 0;
  // One fused pass of SGD(+momentum); momentum_buf may be null when params.momentum == 0; p_bf16 as above.
  virtual void sgd_step(const SgdParams& params, float* p, const float* g, float* momentum_buf, std::int64_t n,
                        std::uint16_t* p_bf16) = 0;

  // x(n) *= alpha.
  virtual void scale(float* x, float alpha, std::int64_t n) = 0;
  // y(n) += alpha * x(n) (gradient compression's error feedback: error += gradient).
  virtual void axpy(float alpha, const float* x, float* y, std::int64_t n) = 0;
  // 16-bit wire formats (gradient compression): dst(n) = round-to-nearest-even of src in format f
  // (elementwise.hpp wire16_encode); when residual != nullptr, residual(n) = src - decode(dst), the
  // rounding error (residual may be src itself: error feedback keeps it in place).
  virtual void encode_wire16(Wire16 f, const float* src, std::uint16_t* dst, float* residual, std::int64_t n) = 0;
  // dst(n) = decode(src) (exact).
  virtual void decode_wire16(Wire16 f, const std::uint16_t* src, float* dst, std::int64_t n) = 0;
  // Set n floats to zero.
  virtual void zero(float* x, std::int64_t n) = 0;
  // Copy n floats (both on device()).
  virtual void copy(float* dst, const float* src, std::int64_t n) = 0;

  // The synthetic data set's rows (kernels/synthetic_data.hpp: x(count, in_dim) and y(count) of
  // global samples [first, first + count)), made on device(): x, y and spec.teacher are device()
  // memory. The same bits on every device (CpuOps: the vectorised host maker; CudaOps: a kernel,
  // queued like the other ops), so a GPU step needs no host fill and no upload for synthetic data.
  virtual void synthetic_rows(const SyntheticSpec& spec, std::int64_t first, std::int64_t count, float* x,
                              std::int32_t* y) = 0;

  // Sum of x_i^2 over n floats of device() memory, accumulated in double in an order fixed by n
  // (repeated calls are bitwise identical); the result is finite exactly when every element is
  // finite (float squares cannot overflow a double). Waits for the work issued before it.
  virtual double sum_squares(const float* x, std::int64_t n) = 0;

  // ---- memory of device() (kernels/ops_buffer.hpp wraps it; allocate only at set-up) ----
  // `bytes` of zero-filled memory on device(), aligned for any element type; nullptr for 0 bytes.
  // Throws core::Error (naming the size) when the device is out of memory.
  virtual void* allocate_bytes(std::size_t bytes) = 0;
  // Releases memory from allocate_bytes (nullptr: nothing). Waits for work that may still use it.
  virtual void free_bytes(void* p) noexcept = 0;
  // Host -> device() copy, ordered after the work issued so far; returns when the copy is complete
  // (src may be reused at once, and timing a step around it measures real work).
  virtual void copy_from_host(void* dst, const void* src, std::size_t bytes) = 0;
  // device() -> host copy, ordered after the work issued so far; returns when dst holds the bytes.
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;

  // Waits for everything issued so far. CudaOps also reports here errors that a kernel could only
  // flag on the device (e.g. a softmax_xent label out of range), as core::Error.
  virtual void synchronize() = 0;

  // ---- a step with one host synchronisation (docs/gpu.md, "One synchronisation per step") ----
  // On a GPU every host round trip costs a few microseconds of idle device, so a training step
  // queues all its work and waits once. These calls queue and return; their results are valid
  // after the next synchronize(). On the CPU they run at once (the defaults below).
  //
  // Host memory for staging `bytes` (pinned on a GPU, so the async copies below really are
  // asynchronous; plain aligned memory on the CPU), zero-filled; nullptr for 0 bytes.
  virtual void* allocate_host_bytes(std::size_t bytes);
  virtual void free_host_bytes(void* p) noexcept;
  // Host -> device() / device() -> host copies queued after the work issued so far. `src` / `dst`
  // must be memory from allocate_host_bytes; the host must not touch it until a later
  // synchronize() has returned.
  virtual void copy_from_host_async(void* dst, const void* src, std::size_t bytes) { copy_from_host(dst, src, bytes); }
  virtual void copy_to_host_async(void* dst, const void* src, std::size_t bytes) { copy_to_host(dst, src, bytes); }
  // *out (device() memory) = sum_squares(x, n), queued.
  virtual void sum_squares_to(const float* x, std::int64_t n, double* out) { *out = sum_squares(x, n); }
  // out[0..2] (device() memory) = step_numerics(losses[0..k), *grad_sumsq) of elementwise.hpp,
  // queued; all pointers device() memory.
  virtual void step_numerics(const float* losses, std::int64_t k, const double* grad_sumsq, double* out) {
    kernels::step_numerics(losses, k, grad_sumsq, out);
  }
  // ---- an optimizer step decided on the device (the optimizer inside the step's CUDA graph) ----
  // A replayed step cannot wait for the host's verdict before its optimizer, so these read their
  // decisions and scalars from device() memory when they run (values of replay time, not capture
  // time); each gives the bits of its eager counterpart (elementwise.hpp, "an update decided on the
  // device"). All pointers device() memory; queued like the calls above.
  //   update_gate      *gate = update_gate(numerics, max_norm): skip, and the clip factor
  //   scale_gated      x *= gate->clip, unless gate->skip or gate->clip >= 1 (then nothing)
  //   adam_step_gated  adam_step(*params, ...) unless gate->skip; sgd_step_gated likewise, whose
  //                    momentum_buf must be given exactly when params->momentum != 0 (CudaOps picks
  //                    its kernel by the buffer: the host cannot read *params)
  virtual void update_gate(const double* numerics, double max_norm, UpdateGate* gate);
  virtual void scale_gated(float* x, const UpdateGate* gate, std::int64_t n);
  virtual void adam_step_gated(const AdamParams* params, const UpdateGate* gate, float* p, const float* g, float* m,
                               float* v, std::int64_t n, std::uint16_t* p_bf16);
  virtual void sgd_step_gated(const SgdParams* params, const UpdateGate* gate, float* p, const float* g,
                              float* momentum_buf, std::int64_t n, std::uint16_t* p_bf16);

  // Device-side time stamps for phase timing without waiting: mark() queues a stamp and returns its
  // id; mark_ns(id) is when the device reached it, on the host clock (core::now_ns), valid once a
  // synchronize() issued after the mark has returned. The CPU stamps at the call. Ids are reused
  // after kMarkSlots marks: read a mark before issuing that many more.
  static constexpr std::uint32_t kMarkSlots = 1024;
  virtual std::uint32_t mark();
  virtual std::int64_t mark_ns(std::uint32_t id) const;

  // ---- input uploads off the step's critical path (the input pipeline, docs/design.md) ----
  // The next step's batch travels while this step computes: upload_async queues a host -> device()
  // copy on the ops' *copy stream* (a second stream, so it overlaps the compute stream's work) and
  // marks its end with upload event `slot`; wait_for_upload(slot) makes the compute stream wait for
  // that event on the device — the host never waits. `src` must be allocate_host_bytes memory and
  // stay untouched until a synchronize() issued after wait_for_upload(slot) has returned (the
  // compute stream, and so that synchronize, is then past the copy). Slots are reused: upload into
  // a slot again only after the previous upload of that slot was waited for. The CPU copies at once
  // and has nothing to wait for.
  static constexpr int kUploadSlots = 8;
  virtual void upload_async(int slot, void* dst, const void* src, std::size_t bytes);
  virtual void wait_for_upload(int /*slot*/) {}

  // Named profiler ranges around phases and layers: NVTX on CudaOps (so `nsys profile` shows forward,
  // backward and the optimizer per layer on the timeline), nothing on the CPU. Ranges nest; `name`
  // must stay valid until the matching range_pop().
  virtual void range_push(const char* /*name*/) {}
  virtual void range_pop() {}

  // The stream the ops are queued on, for callers that must order other work after them (e.g. an
  // NCCL all-reduce of the gradients): a cudaStream_t for CudaOps, nullptr for CpuOps.
  virtual void* native_stream() const { return nullptr; }

  // ---- CUDA graphs: record a sequence of calls once, replay it with one launch (docs/gpu.md) ----
  // Every call of a GPU step is a kernel launch from the host (a few microseconds each); a CUDA graph
  // replays all of them as one. supports_graphs() says whether this implementation can: the CPU runs
  // every call at once and cannot (the capture calls below throw core::Error there; abort_capture and
  // destroy_graph do nothing).
  //   begin_capture()   the calls queued on the compute stream (native_stream(), also work ordered after
  //                     it, e.g. NCCL joined through events) are recorded from now on, not run;
  //   end_capture()     stops recording and returns the instantiated graph; throws core::Error (with
  //                     CUDA's reason) if CUDA refused something during the capture, which then is over;
  //   launch_graph(g)   queues one replay on the compute stream: it runs after the calls issued before it,
  //                     and the calls issued after it run after the whole replay, like any other call;
  //   destroy_graph(g)  releases it (a replay in flight still finishes); 0 and unknown ids do nothing;
  //   abort_capture()   ends an open capture and drops what it recorded (for error paths).
  // While capturing, only calls that queue work may be made (gemm ... step_numerics, mark, the async
  // copies between device() memory and allocate_host_bytes memory); a call that waits for the device or
  // (de)allocates (synchronize, sum_squares, copy_from_host, copy_to_host, allocate_*) throws core::Error
  // and leaves the capture open (abort_capture()); free_bytes/free_host_bytes cannot throw: CUDA refuses
  // them and the capture fails at end_capture(). Other threads may keep using CUDA meanwhile (the capture
  // holds back only the capturing thread: CUDA's thread-local capture mode).
  // A replay reads and writes the buffers the recorded calls named, with their contents at replay time
  // (pointers are captured, not data); scalar arguments are those of the capture (gemm's alpha/beta,
  // AdamParams/SgdParams: a replayed optimizer step reuses the captured step count and learning rate).
  // A mark() recorded in a graph is re-recorded by every replay: read mark_ns() after the replay's
  // synchronize(). Its id belongs to the graph until destroy_graph(): later mark()s skip it. Ids are > 0 and never reused by one Ops object; its destructor destroys the rest.
  using GraphId = std::uint32_t;
  virtual bool supports_graphs() const { return false; }
  virtual bool capturing() const { return false; }
  virtual void begin_capture();
  virtual GraphId end_capture();
  virtual void launch_graph(GraphId graph);
  virtual void destroy_graph(GraphId /*graph*/) noexcept {}
  virtual void abort_capture() noexcept {}

 private:
  // The CPU's marks: host times (mark() / mark_ns()).
  std::array<std::int64_t, kMarkSlots> host_marks_{};
  std::uint32_t next_mark_ = 0;
};

// How the CPU GEMM uses its threads. FixedTiles (the default): C in tiles fixed by the shape, each
// a single-threaded sgemm, the tiles shared among the threads, so the bits do not depend on the
// thread count (kernels/cpu/tiled_gemm.hpp). OpenBlasThreads: one sgemm with OpenBLAS's own threads,
// whose bits do depend on it; `bench compute` times it beside the default.
enum class CpuGemm { FixedTiles, OpenBlasThreads };

// The CPU implementation with blas_threads threads for its GEMMs. OpenBLAS's thread count is a
// process-wide setting: FixedTiles sets it to 1, OpenBlasThreads to blas_threads around each GEMM.
std::unique_ptr<Ops> make_cpu_ops(int blas_threads, CpuGemm gemm = CpuGemm::FixedTiles);

// The CUDA implementation on GPU `device` (cuBLAS + custom kernels, its own non-blocking stream);
// tf32 lets cuBLAS use TF32 tensor cores for GEMM (about 10-bit mantissa products, see cuda_ops.cpp).
// Always declared: in a build with MICRODDP_CUDA=OFF the definition (kernels/cpu/no_cuda_ops.cpp)
// throws core::Error saying so, so callers need no #if. Targets that want the real one link
// microddp_kernels_cuda, which also defines MICRODDP_HAVE_CUDA=1 for them.
std::unique_ptr<Ops> make_cuda_ops(int device, bool tf32);

}  // namespace microddp::kernels
