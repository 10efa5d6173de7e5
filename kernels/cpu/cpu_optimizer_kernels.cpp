// cpu_optimizer_kernels.cpp — the optimizers' kernels as host loops over elementwise.hpp's updates:
// the reference the CUDA kernels are tested against.
#include <cstdint>
#include <memory>

#include "core/error.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/optimizer_kernels.hpp"

namespace microddp::kernels {

namespace {

class CpuOptimizerKernels final : public OptimizerKernels {
 public:
  explicit CpuOptimizerKernels(Ops& ops) : ops_(ops) {}

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

  // The CPU reads the gate and the scalars at once (its "device" memory is the host's) and runs the
  // eager calls, so the gated step is the eager step by construction.
  void update_gate(const StepNumerics* numerics, double max_norm, UpdateGate* gate) override {
    *gate = kernels::update_gate(*numerics, max_norm);
  }
  void scale_gated(float* x, const UpdateGate* gate, std::int64_t n) override {
    if (gate->skip == 0 && gate->clip < 1.0f) ops_.scale(x, gate->clip, n);
  }
  void adam_step_gated(const AdamParams* params, const UpdateGate* gate, float* p, const float* g, float* m, float* v,
                       std::int64_t n, std::uint16_t* p_bf16) override {
    if (gate->skip == 0) adam_step(*params, p, g, m, v, n, p_bf16);
  }
  void sgd_step_gated(const SgdParams* params, const UpdateGate* gate, float* p, const float* g, float* momentum_buf,
                      std::int64_t n, std::uint16_t* p_bf16) override {
    if (gate->skip == 0) sgd_step(*params, p, g, momentum_buf, n, p_bf16);
  }

 private:
  // The optimizers' bf16 copy of the weights (p_bf16 may be null: none). A loop of its own on the CPU
  // (the reference: same bits as the GPU's fused store), so the update loops above stay vectorised.
  static void round_to_bf16(const float* __restrict p, std::uint16_t* __restrict p_bf16, std::int64_t n) {
    if (p_bf16 == nullptr) return;
    for (std::int64_t i = 0; i < n; ++i) p_bf16[i] = float_to_bf16_bits(p[i]);
  }

  Ops& ops_;  // scale_gated's eager scale
};

}  // namespace

std::unique_ptr<OptimizerKernels> make_cpu_optimizer_kernels(Ops& ops) {
  return std::make_unique<CpuOptimizerKernels>(ops);
}

}  // namespace microddp::kernels
