// elementwise_kernels.cu — the memory-bound CUDA kernels: bias+activation, ReLU backward, fused
// Adam/AdamW and SGD, scale, element-wise reduce and fp32<->bf16, plus zero/copy launchers.
// Contract: see cuda_kernels.hpp. Every kernel is a grid-stride loop with 64-bit indices over
// grid_stride_geometry(n), calling the per-element functions of elementwise.hpp — the same code the
// CPU ops and the CPU unit tests run.
#include <cstdint>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda_kernels.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/launch_geometry.hpp"

namespace microddp::kernels::gpu {

namespace {

__device__ __forceinline__ std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

void check_count(std::int64_t n, const char* op) { MDDP_CHECK(n >= 0, op << ": negative count " << n); }

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

__global__ void adam_step_kernel(AdamParams a, float* __restrict__ p, const float* __restrict__ g,
                                 float* __restrict__ m, float* __restrict__ v, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    float pi = p[i], mi = m[i], vi = v[i];
    adam_update(a, pi, g[i], mi, vi);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
  }
}

template <bool kMomentum>
__global__ void sgd_step_kernel(SgdParams s, float* __restrict__ p, const float* __restrict__ g,
                                float* __restrict__ buf, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    float pi = p[i];
    float bi = kMomentum ? buf[i] : 0.0f;
    sgd_update(s, pi, g[i], bi);
    p[i] = pi;
    if (kMomentum) buf[i] = bi;
  }
}

__global__ void scale_kernel(float* __restrict__ x, float alpha, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) x[i] *= alpha;
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

}  // namespace

void bias_act_forward(float* y, const float* bias, std::int64_t rows, std::int64_t cols, bool relu_on,
                      cudaStream_t stream) {
  MDDP_CHECK(rows >= 0 && cols >= 0, "bias_act_forward: negative shape (" << rows << ", " << cols << ")");
  MDDP_CHECK(cols == 0 || rows <= INT64_MAX / cols, "bias_act_forward: rows * cols overflows int64");
  const std::int64_t count = rows * cols;
  const LaunchGeometry g = grid_stride_geometry(count);
  if (g.empty()) return;
  if (relu_on) {
    bias_act_forward_kernel<true><<<g.blocks, g.threads, 0, stream>>>(y, bias, count, cols);
  } else {
    bias_act_forward_kernel<false><<<g.blocks, g.threads, 0, stream>>>(y, bias, count, cols);
  }
  MDDP_CUDA_CHECK_LAUNCH();
}

void relu_backward(float* dy, const float* y, std::int64_t count, cudaStream_t stream) {
  check_count(count, "relu_backward");
  const LaunchGeometry g = grid_stride_geometry(count);
  if (g.empty()) return;
  relu_backward_kernel<<<g.blocks, g.threads, 0, stream>>>(dy, y, count);
  MDDP_CUDA_CHECK_LAUNCH();
}

void adam_step(const AdamParams& params, float* p, const float* g, float* m, float* v, std::int64_t n,
               cudaStream_t stream) {
  check_count(n, "adam_step");
  const LaunchGeometry geo = grid_stride_geometry(n);
  if (geo.empty()) return;
  adam_step_kernel<<<geo.blocks, geo.threads, 0, stream>>>(params, p, g, m, v, n);
  MDDP_CUDA_CHECK_LAUNCH();
}

void sgd_step(const SgdParams& params, float* p, const float* g, float* momentum_buf, std::int64_t n,
              cudaStream_t stream) {
  check_count(n, "sgd_step");
  const LaunchGeometry geo = grid_stride_geometry(n);
  if (geo.empty()) return;
  if (params.momentum != 0.0f) {
    MDDP_CHECK(momentum_buf != nullptr, "sgd_step: momentum " << params.momentum << " needs a momentum buffer");
    sgd_step_kernel<true><<<geo.blocks, geo.threads, 0, stream>>>(params, p, g, momentum_buf, n);
  } else {
    sgd_step_kernel<false><<<geo.blocks, geo.threads, 0, stream>>>(params, p, g, nullptr, n);
  }
  MDDP_CUDA_CHECK_LAUNCH();
}

void scale(float* x, float alpha, std::int64_t n, cudaStream_t stream) {
  check_count(n, "scale");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  scale_kernel<<<g.blocks, g.threads, 0, stream>>>(x, alpha, n);
  MDDP_CUDA_CHECK_LAUNCH();
}

void zero(float* x, std::int64_t n, cudaStream_t stream) {
  check_count(n, "zero");
  if (n == 0) return;
  MDDP_CUDA_CHECK(cudaMemsetAsync(x, 0, static_cast<std::size_t>(n) * sizeof(float), stream));
}

void copy(float* dst, const float* src, std::int64_t n, cudaStream_t stream) {
  check_count(n, "copy");
  if (n == 0 || dst == src) return;
  MDDP_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream));
}

void reduce(float* dst, const float* a, const float* b, std::int64_t n, core::ReduceOp op, cudaStream_t stream) {
  check_count(n, "reduce");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  // One instantiation per operator keeps the per-element switch out of the loop.
  switch (op) {
    case core::ReduceOp::Max: reduce_kernel<core::ReduceOp::Max><<<g.blocks, g.threads, 0, stream>>>(dst, a, b, n); break;
    case core::ReduceOp::Min: reduce_kernel<core::ReduceOp::Min><<<g.blocks, g.threads, 0, stream>>>(dst, a, b, n); break;
    case core::ReduceOp::Sum:
    case core::ReduceOp::Mean: reduce_kernel<core::ReduceOp::Sum><<<g.blocks, g.threads, 0, stream>>>(dst, a, b, n); break;
  }
  MDDP_CUDA_CHECK_LAUNCH();
}

void f32_to_bf16(std::uint16_t* dst, const float* src, std::int64_t n, cudaStream_t stream) {
  check_count(n, "f32_to_bf16");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  f32_to_bf16_kernel<<<g.blocks, g.threads, 0, stream>>>(dst, src, n);
  MDDP_CUDA_CHECK_LAUNCH();
}

void bf16_to_f32(float* dst, const std::uint16_t* src, std::int64_t n, cudaStream_t stream) {
  check_count(n, "bf16_to_f32");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  bf16_to_f32_kernel<<<g.blocks, g.threads, 0, stream>>>(dst, src, n);
  MDDP_CUDA_CHECK_LAUNCH();
}

}  // namespace microddp::kernels::gpu
