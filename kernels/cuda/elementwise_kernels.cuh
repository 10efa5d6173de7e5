// elementwise_kernels.cuh — the bodies of the memory-bound CUDA kernels launched by
// elementwise_kernels.cu: bias+activation, ReLU backward, fused Adam/AdamW and SGD, scale,
// element-wise reduce and fp32<->bf16. Every kernel is a grid-stride loop with 64-bit indices over
// grid_stride_geometry(n), calling the per-element functions of elementwise.hpp.
// Contract: device code only (no launchers, no host checks: those are in the .cu). Included by the
// .cu that launches them (nvcc, or the emulated build: tests/cuda_emu) and by tests that launch the
// kernels directly. The kernels are in an unnamed namespace, as they were in the .cu: every
// translation unit that includes this header gets its own copy, with no cross-file linkage (whole-
// program compilation per .cu, no device linking).
#pragma once

#include <cstdint>

#include "core/reduce_op.hpp"
#include "kernels/cuda/grid_stride.cuh"
#include "kernels/elementwise.hpp"

namespace microddp::kernels::gpu {

namespace {

template <bool kRelu>
__global__ void bias_act_forward_kernel(float* __restrict__ y, const float* __restrict__ bias, std::int64_t count,
                                        std::int64_t cols) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    const float t = y[i] + bias[i % cols];
    y[i] = kRelu ? relu(t) : t;
  }
}

__global__ void relu_backward_kernel(float* __restrict__ dy, const float* __restrict__ y, std::int64_t n) {
  // Qualified: inside namespace gpu, the unqualified name would find the launcher gpu::relu_backward.
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dy[i] = kernels::relu_backward(dy[i], y[i]);
}

// The optimizer passes, shared by the eager kernels (parameters by value) and the gated ones
// (parameters and decision from device memory). pb (nullable): the updated weight's bf16 rounding,
// stored from the register (--precision bf16's GEMM copy made by the optimizer: no second pass over
// the weights). A uniform branch per element.
__device__ __forceinline__ void adam_pass(const AdamParams& a, float* __restrict__ p, const float* __restrict__ g,
                                          float* __restrict__ m, float* __restrict__ v, std::int64_t n,
                                          std::uint16_t* __restrict__ pb) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    float pi = p[i], mi = m[i], vi = v[i];
    adam_update(a, pi, g[i], mi, vi);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
    if (pb != nullptr) pb[i] = float_to_bf16_bits(pi);
  }
}

template <bool kMomentum>
__device__ __forceinline__ void sgd_pass(const SgdParams& s, float* __restrict__ p, const float* __restrict__ g,
                                         float* __restrict__ buf, std::int64_t n, std::uint16_t* __restrict__ pb) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    float pi = p[i];
    float bi = kMomentum ? buf[i] : 0.0f;
    sgd_update(s, pi, g[i], bi);
    p[i] = pi;
    if (kMomentum) buf[i] = bi;
    if (pb != nullptr) pb[i] = float_to_bf16_bits(pi);
  }
}

__global__ void adam_step_kernel(AdamParams a, float* __restrict__ p, const float* __restrict__ g,
                                 float* __restrict__ m, float* __restrict__ v, std::int64_t n,
                                 std::uint16_t* __restrict__ pb) {
  adam_pass(a, p, g, m, v, n, pb);
}

template <bool kMomentum>
__global__ void sgd_step_kernel(SgdParams s, float* __restrict__ p, const float* __restrict__ g,
                                float* __restrict__ buf, std::int64_t n, std::uint16_t* __restrict__ pb) {
  sgd_pass<kMomentum>(s, p, g, buf, n, pb);
}

__global__ void scale_kernel(float* __restrict__ x, float alpha, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) x[i] *= alpha;
}

// ---- the update decided on the device (elementwise.hpp): every thread reads the gate; a skipped
// step returns before touching memory, so the buffers keep their bits exactly.
__global__ void update_gate_kernel(const StepNumerics* __restrict__ numerics, double max_norm,
                                   UpdateGate* __restrict__ gate) {
  *gate = kernels::update_gate(*numerics, max_norm);
}

__global__ void scale_gated_kernel(float* __restrict__ x, const UpdateGate* __restrict__ gate, std::int64_t n) {
  const UpdateGate g = *gate;
  if (g.skip != 0 || !(g.clip < 1.0f)) return;
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) x[i] *= g.clip;
}

__global__ void adam_step_gated_kernel(const AdamParams* __restrict__ params, const UpdateGate* __restrict__ gate,
                                       float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                                       float* __restrict__ v, std::int64_t n, std::uint16_t* __restrict__ pb) {
  if (gate->skip != 0) return;
  const AdamParams a = *params;  // a local copy: registers, not a reload per element
  adam_pass(a, p, g, m, v, n, pb);
}

template <bool kMomentum>
__global__ void sgd_step_gated_kernel(const SgdParams* __restrict__ params, const UpdateGate* __restrict__ gate,
                                      float* __restrict__ p, const float* __restrict__ g, float* __restrict__ buf,
                                      std::int64_t n, std::uint16_t* __restrict__ pb) {
  if (gate->skip != 0) return;
  const SgdParams s = *params;
  sgd_pass<kMomentum>(s, p, g, buf, n, pb);
}

__global__ void axpy_kernel(float alpha, const float* __restrict__ x, float* __restrict__ y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] += alpha * x[i];
}

// residual may alias src (error feedback rewrites its buffer in place): no __restrict__ on those two.
__global__ void encode_wire16_kernel(Wire16 f, const float* src, std::uint16_t* __restrict__ dst, float* residual,
                                     std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    if (residual != nullptr) {
      residual[i] = wire16_encode_residual(f, src[i], dst + i);
    } else {
      dst[i] = wire16_encode(f, src[i]);
    }
  }
}

__global__ void decode_wire16_kernel(Wire16 f, const std::uint16_t* __restrict__ src, float* __restrict__ dst,
                                     std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dst[i] = wire16_decode(f, src[i]);
}

// No __restrict__: dst may alias a or b (as below).
__global__ void reduce_wire16_kernel(Wire16 f, core::ReduceOp op, std::uint16_t* dst, const std::uint16_t* a,
                                     const std::uint16_t* b, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dst[i] = wire16_reduce_pair(f, op, a[i], b[i]);
}

// No __restrict__: dst may alias a or b (each element is read before it is written, by one thread).
template <core::ReduceOp kOp>
__global__ void reduce_kernel(float* dst, const float* a, const float* b, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dst[i] = reduce_pair(kOp, a[i], b[i]);
}

__global__ void f32_to_bf16_kernel(std::uint16_t* __restrict__ dst, const float* __restrict__ src, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dst[i] = float_to_bf16_bits(src[i]);
}

__global__ void bf16_to_f32_kernel(float* __restrict__ dst, const std::uint16_t* __restrict__ src, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dst[i] = bf16_bits_to_float(src[i]);
}

// One thread: a handful of scalars, in the order the host would add them (elementwise.hpp).
// Qualified: inside namespace gpu, the unqualified name would find the launcher gpu::step_numerics.
__global__ void step_numerics_kernel(const float* __restrict__ losses, std::int64_t k,
                                     const double* __restrict__ grad_sumsq, StepVerdict* __restrict__ out) {
  kernels::step_numerics(losses, k, grad_sumsq, out);
}

}  // namespace

}  // namespace microddp::kernels::gpu
