// cuda_kernels.hpp — launchers of microddp's CUDA kernels (defined in kernels/cuda/*.cu, built
// into microddp_kernels_cuda when MICRODDP_CUDA=ON). Plain C++: includable without CUDA headers.
// Contract of every launcher: pointers are device memory; it checks its arguments (core::Error),
// enqueues on the caller's `stream` (nullptr = legacy default stream) and checks the launch; it does
// not synchronise. Shapes are row-major as in ops.hpp; per-element math is elementwise.hpp's.
// Reductions (bias_grad, softmax_xent, sum_squares) use a fixed order that depends only on the
// shape, so repeated runs are bitwise identical.
//
// Stream type: we forward-declare cudaStream_t exactly as the CUDA runtime defines it
// (`typedef struct CUstream_st* cudaStream_t;` in driver_types.h). Repeating an identical typedef is
// legal C++, so this header and cuda_runtime.h can be included in any order, and callers keep type
// safety without pulling CUDA headers (a void* would silently accept any pointer).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/reduce_op.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/synthetic_data.hpp"

struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;

namespace microddp::kernels::gpu {

// y(rows, cols) = act(y + bias), bias(cols) broadcast; act = ReLU if relu else identity.
void bias_act_forward(float* y, const float* bias, std::int64_t rows, std::int64_t cols, bool relu,
                      cudaStream_t stream);

// dy(count) = relu_backward(dy, y), in place.
void relu_backward(float* dy, const float* y, std::int64_t count, cudaStream_t stream);

// db(cols) += column sums of dy(rows, cols).
void bias_grad(float* db, const float* dy, std::int64_t rows, std::int64_t cols, cudaStream_t stream);

// Device scratch for softmax_xent: one double per block (at most kXentMaxBlocks) and an error flag.
struct XentWorkspace {
  double* block_partials = nullptr;  // kXentMaxBlocks doubles
  int* error_flag = nullptr;         // set to 1 by the kernel on a label outside [0, classes)
};
std::size_t softmax_xent_workspace_bytes();
// Carves an XentWorkspace out of `bytes` >= softmax_xent_workspace_bytes() of device memory at `base`
// (aligned for double); the caller zeroes the flag once (cudaMemset) before first use.
XentWorkspace softmax_xent_workspace(void* base, std::size_t bytes);

// Softmax cross-entropy as Ops::softmax_xent: dlogits(rows, classes) and *loss_out (one device
// float) overwritten. A bad label cannot throw from the GPU: the kernel sets *ws.error_flag = 1 and
// makes the loss NaN; the caller checks the flag later (CudaOps does in synchronize()).
void softmax_xent(const float* logits, const std::int32_t* labels, std::int64_t rows, std::int64_t classes, float scale,
                  float* dlogits, float* loss_out, XentWorkspace ws, cudaStream_t stream);

// Sum of squares as Ops::sum_squares: *out (one device double) = sum_i x_i^2 over x(n), accumulated
// in double in two deterministic passes: at most kSumSquaresMaxBlocks blocks (grid a function of n
// only) each write one partial to `partials`, then one block adds the partials in a fixed order.
// Overwrites *out also for n == 0 (with 0). Non-finite exactly when some x_i is (NaN or Inf).
// `partials` is device scratch of sum_squares_workspace_bytes() (kSumSquaresMaxBlocks doubles; no
// zeroing needed: pass 1 writes every partial that pass 2 reads). Stream-ordered: reuse partials
// only on the same stream (or after synchronising).
inline constexpr std::uint32_t kSumSquaresMaxBlocks = 1024;
std::size_t sum_squares_workspace_bytes();
void sum_squares(const float* x, std::int64_t n, double* partials, double* out, cudaStream_t stream);

// Fused optimizer passes (one read and one write of each state array); p_bf16, when not null, gets
// the updated weights rounded to bf16 in the same pass (OptimizerKernels::adam_step).
void adam_step(const AdamParams& params, float* p, const float* g, float* m, float* v, std::int64_t n,
               std::uint16_t* p_bf16, cudaStream_t stream);
// momentum_buf may be null when params.momentum == 0.
void sgd_step(const SgdParams& params, float* p, const float* g, float* momentum_buf, std::int64_t n,
              std::uint16_t* p_bf16, cudaStream_t stream);

// x(n) *= alpha.
void scale(float* x, float alpha, std::int64_t n, cudaStream_t stream);
// The update decided on the device (OptimizerKernels::update_gate ... sgd_step_gated; elementwise.hpp): the gate
// from the all-reduced numerics (one thread), then the same passes as scale / adam_step / sgd_step
// whose every thread reads the gate (and the optimizer's parameters) from device memory.
void update_gate(const StepNumerics* numerics, double max_norm, UpdateGate* gate, cudaStream_t stream);
void scale_gated(float* x, const UpdateGate* gate, std::int64_t n, cudaStream_t stream);
void adam_step_gated(const AdamParams* params, const UpdateGate* gate, float* p, const float* g, float* m, float* v,
                     std::int64_t n, std::uint16_t* p_bf16, cudaStream_t stream);
void sgd_step_gated(const SgdParams* params, bool momentum, const UpdateGate* gate, float* p, const float* g,
                    float* momentum_buf, std::int64_t n, std::uint16_t* p_bf16, cudaStream_t stream);
// y(n) += alpha * x(n).
void axpy(float alpha, const float* x, float* y, std::int64_t n, cudaStream_t stream);
// Gradient compression's 16-bit wire formats (Ops::encode_wire16 / decode_wire16; the per-element
// math is elementwise.hpp's wire16_*, shared with the CPU loops). residual may be null or alias src.
void encode_wire16(Wire16 f, const float* src, std::uint16_t* dst, float* residual, std::int64_t n,
                   cudaStream_t stream);
void decode_wire16(Wire16 f, const std::uint16_t* src, float* dst, std::int64_t n, cudaStream_t stream);
// dst(n) = a op b on 16-bit data: decode, combine in fp32, round once (the GPU ring's reduction hop).
void reduce_wire16(Wire16 f, std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b, std::int64_t n,
                   core::ReduceOp op, cudaStream_t stream);
// x(n) = 0 (cudaMemsetAsync: the copy engines beat a kernel, and all-zero bits are 0.0f).
void zero(float* x, std::int64_t n, cudaStream_t stream);
// dst(n) = src(n), device to device (cudaMemcpyAsync, same reason).
void copy(float* dst, const float* src, std::int64_t n, cudaStream_t stream);

// dst(n) = reduce_pair(op, a, b) element-wise (Mean combines like Sum); dst may alias a or b.
// For a GPU ring all-reduce.
void reduce(float* dst, const float* a, const float* b, std::int64_t n, core::ReduceOp op, cudaStream_t stream);

// *out = step_numerics(losses[0..k), *grad_sumsq) of elementwise.hpp, on the device (one thread).
void step_numerics(const float* losses, std::int64_t k, const double* grad_sumsq, StepVerdict* out,
                   cudaStream_t stream);

// The synthetic data set's rows x(count, in_dim) and y(count) of samples [first, first + count)
// (synthetic_data.hpp; spec.teacher is device memory): the same bits as synthetic_rows_host. Two
// kernels: the features, one element per thread of a grid-stride loop, then the labels, one sample
// per lane with its classes split over the warps of a block.
void synthetic_rows(const SyntheticSpec& spec, std::int64_t first, std::int64_t count, float* x, std::int32_t* y,
                    cudaStream_t stream);

// fp32 <-> bf16 (bf16 stored as its 16 bits); round to nearest even, as float_to_bf16_bits.
void f32_to_bf16(std::uint16_t* dst, const float* src, std::int64_t n, cudaStream_t stream);
void bf16_to_f32(float* dst, const std::uint16_t* src, std::int64_t n, cudaStream_t stream);

}  // namespace microddp::kernels::gpu
