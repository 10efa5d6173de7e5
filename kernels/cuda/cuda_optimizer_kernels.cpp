// cuda_optimizer_kernels.cpp — the optimizers' kernels on a CUDA stream: the launchers of
// cuda_kernels.hpp, queued on the CUDA Ops's stream so they run in order with its calls.
#include <cuda_runtime.h>

#include <memory>

#include "kernels/cuda_kernels.hpp"
#include "kernels/optimizer_kernels.hpp"

namespace microddp::kernels {

namespace {

class CudaOptimizerKernels final : public OptimizerKernels {
 public:
  explicit CudaOptimizerKernels(core::DeviceStream stream) : stream_(static_cast<cudaStream_t>(stream.native())) {}

  void adam_step(const AdamParams& params, float* p, const float* g, float* m, float* v, std::int64_t n,
                 std::uint16_t* p_bf16) override {
    gpu::adam_step(params, p, g, m, v, n, p_bf16, stream_);
  }
  void sgd_step(const SgdParams& params, float* p, const float* g, float* momentum_buf, std::int64_t n,
                std::uint16_t* p_bf16) override {
    gpu::sgd_step(params, p, g, momentum_buf, n, p_bf16, stream_);
  }
  void update_gate(const StepNumerics* numerics, double max_norm, UpdateGate* gate) override {
    gpu::update_gate(numerics, max_norm, gate, stream_);
  }
  void scale_gated(float* x, const UpdateGate* gate, std::int64_t n) override { gpu::scale_gated(x, gate, n, stream_); }
  void adam_step_gated(const AdamParams* params, const UpdateGate* gate, float* p, const float* g, float* m, float* v,
                       std::int64_t n, std::uint16_t* p_bf16) override {
    gpu::adam_step_gated(params, gate, p, g, m, v, n, p_bf16, stream_);
  }
  // The momentum kernel is chosen by the buffer: the host cannot read params->momentum (device memory).
  void sgd_step_gated(const SgdParams* params, const UpdateGate* gate, float* p, const float* g, float* momentum_buf,
                      std::int64_t n, std::uint16_t* p_bf16) override {
    gpu::sgd_step_gated(params, momentum_buf != nullptr, gate, p, g, momentum_buf, n, p_bf16, stream_);
  }

 private:
  cudaStream_t stream_;
};

}  // namespace

std::unique_ptr<OptimizerKernels> make_cuda_optimizer_kernels(core::DeviceStream stream) {
  return std::make_unique<CudaOptimizerKernels>(stream);
}

}  // namespace microddp::kernels
