// elementwise_kernels.cu — the memory-bound CUDA kernels: bias+activation, ReLU backward, fused
// Adam/AdamW and SGD, scale, element-wise reduce and fp32<->bf16, plus zero/copy launchers.
// Contract: see cuda_kernels.hpp. The kernel bodies are in elementwise_kernels.cuh (grid-stride loops
// calling the per-element functions of elementwise.hpp — the same code the CPU ops and the CPU unit
// tests run); this file checks arguments, picks the geometry and launches (MDDP_LAUNCH).
#include <cstdint>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/elementwise_kernels.cuh"
#include "kernels/cuda/launch.hpp"
#include "kernels/cuda_kernels.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/launch_geometry.hpp"

namespace microddp::kernels::gpu {

namespace {

void check_count(std::int64_t n, const char* op) { MDDP_CHECK(n >= 0, op << ": negative count " << n); }

}  // namespace

void bias_act_forward(float* y, const float* bias, std::int64_t rows, std::int64_t cols, bool relu_on,
                      cudaStream_t stream) {
  MDDP_CHECK(rows >= 0 && cols >= 0, "bias_act_forward: negative shape (" << rows << ", " << cols << ")");
  MDDP_CHECK(cols == 0 || rows <= INT64_MAX / cols, "bias_act_forward: rows * cols overflows int64");
  const std::int64_t count = rows * cols;
  const LaunchGeometry g = grid_stride_geometry(count);
  if (g.empty()) return;
  if (relu_on) {
    MDDP_LAUNCH(bias_act_forward_kernel<true>, g.blocks, g.threads, 0, stream)(y, bias, count, cols);
  } else {
    MDDP_LAUNCH(bias_act_forward_kernel<false>, g.blocks, g.threads, 0, stream)(y, bias, count, cols);
  }
  MDDP_CUDA_CHECK_LAUNCH();
}

void relu_backward(float* dy, const float* y, std::int64_t count, cudaStream_t stream) {
  check_count(count, "relu_backward");
  const LaunchGeometry g = grid_stride_geometry(count);
  if (g.empty()) return;
  MDDP_LAUNCH(relu_backward_kernel, g.blocks, g.threads, 0, stream)(dy, y, count);
  MDDP_CUDA_CHECK_LAUNCH();
}

void adam_step(const AdamParams& params, float* p, const float* g, float* m, float* v, std::int64_t n,
               std::uint16_t* p_bf16, cudaStream_t stream) {
  check_count(n, "adam_step");
  const LaunchGeometry geo = grid_stride_geometry(n);
  if (geo.empty()) return;
  MDDP_LAUNCH(adam_step_kernel, geo.blocks, geo.threads, 0, stream)(params, p, g, m, v, n, p_bf16);
  MDDP_CUDA_CHECK_LAUNCH();
}

void sgd_step(const SgdParams& params, float* p, const float* g, float* momentum_buf, std::int64_t n,
              std::uint16_t* p_bf16, cudaStream_t stream) {
  check_count(n, "sgd_step");
  const LaunchGeometry geo = grid_stride_geometry(n);
  if (geo.empty()) return;
  if (params.momentum != 0.0f) {
    MDDP_CHECK(momentum_buf != nullptr, "sgd_step: momentum " << params.momentum << " needs a momentum buffer");
    MDDP_LAUNCH(sgd_step_kernel<true>, geo.blocks, geo.threads, 0, stream)(params, p, g, momentum_buf, n, p_bf16);
  } else {
    MDDP_LAUNCH(sgd_step_kernel<false>, geo.blocks, geo.threads, 0, stream)(params, p, g, nullptr, n, p_bf16);
  }
  MDDP_CUDA_CHECK_LAUNCH();
}

void scale(float* x, float alpha, std::int64_t n, cudaStream_t stream) {
  check_count(n, "scale");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  MDDP_LAUNCH(scale_kernel, g.blocks, g.threads, 0, stream)(x, alpha, n);
  MDDP_CUDA_CHECK_LAUNCH();
}

void update_gate(const StepNumerics* numerics, double max_norm, UpdateGate* gate, cudaStream_t stream) {
  MDDP_CHECK(numerics != nullptr && gate != nullptr, "update_gate: a null pointer");
  MDDP_LAUNCH(update_gate_kernel, 1, 1, 0, stream)(numerics, max_norm, gate);
  MDDP_CUDA_CHECK_LAUNCH();
}

void scale_gated(float* x, const UpdateGate* gate, std::int64_t n, cudaStream_t stream) {
  check_count(n, "scale_gated");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  MDDP_LAUNCH(scale_gated_kernel, g.blocks, g.threads, 0, stream)(x, gate, n);
  MDDP_CUDA_CHECK_LAUNCH();
}

void adam_step_gated(const AdamParams* params, const UpdateGate* gate, float* p, const float* g, float* m, float* v,
                     std::int64_t n, std::uint16_t* p_bf16, cudaStream_t stream) {
  check_count(n, "adam_step_gated");
  const LaunchGeometry geo = grid_stride_geometry(n);
  if (geo.empty()) return;
  MDDP_LAUNCH(adam_step_gated_kernel, geo.blocks, geo.threads, 0, stream)(params, gate, p, g, m, v, n, p_bf16);
  MDDP_CUDA_CHECK_LAUNCH();
}

void sgd_step_gated(const SgdParams* params, bool momentum, const UpdateGate* gate, float* p, const float* g,
                    float* momentum_buf, std::int64_t n, std::uint16_t* p_bf16, cudaStream_t stream) {
  check_count(n, "sgd_step_gated");
  const LaunchGeometry geo = grid_stride_geometry(n);
  if (geo.empty()) return;
  if (momentum) {
    MDDP_CHECK(momentum_buf != nullptr, "sgd_step_gated: momentum needs a momentum buffer");
    MDDP_LAUNCH(sgd_step_gated_kernel<true>, geo.blocks, geo.threads, 0, stream)(params, gate, p, g, momentum_buf, n,
                                                                                    p_bf16);
  } else {
    MDDP_LAUNCH(sgd_step_gated_kernel<false>, geo.blocks, geo.threads, 0, stream)(params, gate, p, g, nullptr, n, p_bf16);
  }
  MDDP_CUDA_CHECK_LAUNCH();
}

void axpy(float alpha, const float* x, float* y, std::int64_t n, cudaStream_t stream) {
  check_count(n, "axpy");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  MDDP_LAUNCH(axpy_kernel, g.blocks, g.threads, 0, stream)(alpha, x, y, n);
  MDDP_CUDA_CHECK_LAUNCH();
}

void encode_wire16(Wire16 f, const float* src, std::uint16_t* dst, float* residual, std::int64_t n,
                   cudaStream_t stream) {
  check_count(n, "encode_wire16");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  MDDP_LAUNCH(encode_wire16_kernel, g.blocks, g.threads, 0, stream)(f, src, dst, residual, n);
  MDDP_CUDA_CHECK_LAUNCH();
}

void decode_wire16(Wire16 f, const std::uint16_t* src, float* dst, std::int64_t n, cudaStream_t stream) {
  check_count(n, "decode_wire16");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  MDDP_LAUNCH(decode_wire16_kernel, g.blocks, g.threads, 0, stream)(f, src, dst, n);
  MDDP_CUDA_CHECK_LAUNCH();
}

void reduce_wire16(Wire16 f, std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b, std::int64_t n,
                   core::ReduceOp op, cudaStream_t stream) {
  check_count(n, "reduce_wire16");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  MDDP_LAUNCH(reduce_wire16_kernel, g.blocks, g.threads, 0, stream)(f, op, dst, a, b, n);
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
    case core::ReduceOp::Max:
      MDDP_LAUNCH(reduce_kernel<core::ReduceOp::Max>, g.blocks, g.threads, 0, stream)(dst, a, b, n);
      break;
    case core::ReduceOp::Min:
      MDDP_LAUNCH(reduce_kernel<core::ReduceOp::Min>, g.blocks, g.threads, 0, stream)(dst, a, b, n);
      break;
    case core::ReduceOp::Sum:
    case core::ReduceOp::Mean:
      MDDP_LAUNCH(reduce_kernel<core::ReduceOp::Sum>, g.blocks, g.threads, 0, stream)(dst, a, b, n);
      break;
  }
  MDDP_CUDA_CHECK_LAUNCH();
}

void f32_to_bf16(std::uint16_t* dst, const float* src, std::int64_t n, cudaStream_t stream) {
  check_count(n, "f32_to_bf16");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  MDDP_LAUNCH(f32_to_bf16_kernel, g.blocks, g.threads, 0, stream)(dst, src, n);
  MDDP_CUDA_CHECK_LAUNCH();
}

void step_numerics(const float* losses, std::int64_t k, const double* grad_sumsq, StepVerdict* out,
                   cudaStream_t stream) {
  MDDP_CHECK(k >= 1 && losses != nullptr && grad_sumsq != nullptr && out != nullptr,
             "step_numerics: " << k << " losses, or a null pointer");
  MDDP_LAUNCH(step_numerics_kernel, 1, 1, 0, stream)(losses, k, grad_sumsq, out);
  MDDP_CUDA_CHECK_LAUNCH();
}

void bf16_to_f32(float* dst, const std::uint16_t* src, std::int64_t n, cudaStream_t stream) {
  check_count(n, "bf16_to_f32");
  const LaunchGeometry g = grid_stride_geometry(n);
  if (g.empty()) return;
  MDDP_LAUNCH(bf16_to_f32_kernel, g.blocks, g.threads, 0, stream)(dst, src, n);
  MDDP_CUDA_CHECK_LAUNCH();
}

}  // namespace microddp::kernels::gpu
