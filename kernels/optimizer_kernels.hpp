// optimizer_kernels.hpp — the kernels the optimizers run (model/optimizer.hpp), behind an interface of
// their own rather than the model's compute interface (ops.hpp): an optimizer owns its kernels, so a
// new optimizer adds its calls here and leaves Ops, which every device implements whole, alone.
// Contract (as Ops's): pointers are memory of the Ops's device; calls are queued on the Ops's stream
// (CUDA) or run at once (CPU), in order with the Ops's own calls; nothing allocates. Implementations:
// the CPU loops (kernels/cpu/cpu_optimizer_kernels.cpp) over the per-element updates of
// elementwise.hpp, and their CUDA kernels (kernels/cuda/cuda_optimizer_kernels.cpp): the same formulas.
#pragma once

#include <cstdint>
#include <memory>

#include "core/device_stream.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/ops.hpp"

namespace microddp::kernels {

class OptimizerKernels {
 public:
  virtual ~OptimizerKernels() = default;

  // One fused pass of Adam/AdamW over n elements: p, m, v updated in place from g. When p_bf16 is not
  // null, p_bf16(n) = the updated p rounded to bf16 (elementwise.hpp's float_to_bf16_bits) in the same
  // pass: --precision bf16's copy of the weights for the GEMMs, made where the weights are written
  // instead of by a rounding pass of its own (which would read all of p again).
  virtual void adam_step(const AdamParams& params, float* p, const float* g, float* m, float* v, std::int64_t n,
                         std::uint16_t* p_bf16) = 0;
  // One fused pass of SGD(+momentum); momentum_buf may be null when params.momentum == 0; p_bf16 as above.
  virtual void sgd_step(const SgdParams& params, float* p, const float* g, float* momentum_buf, std::int64_t n,
                        std::uint16_t* p_bf16) = 0;

  // ---- an optimizer step decided on the device (the optimizer inside the step's CUDA graph) ----
  // A replayed step cannot wait for the host's verdict before its optimizer, so these read their
  // decisions and scalars from device memory when they run (values of replay time, not capture
  // time); each gives the bits of its eager counterpart (elementwise.hpp, "an update decided on the
  // device"). All pointers device memory; queued like the calls above.
  //   update_gate      *gate = update_gate(*numerics, max_norm): skip, and the clip factor
  //   scale_gated      x *= gate->clip, unless gate->skip or gate->clip >= 1 (then nothing)
  //   adam_step_gated  adam_step(*params, ...) unless gate->skip; sgd_step_gated likewise, whose
  //                    momentum_buf must be given exactly when params->momentum != 0 (the CUDA
  //                    kernel is picked by the buffer: the host cannot read *params)
  virtual void update_gate(const StepNumerics* numerics, double max_norm, UpdateGate* gate) = 0;
  virtual void scale_gated(float* x, const UpdateGate* gate, std::int64_t n) = 0;
  virtual void adam_step_gated(const AdamParams* params, const UpdateGate* gate, float* p, const float* g, float* m,
                               float* v, std::int64_t n, std::uint16_t* p_bf16) = 0;
  virtual void sgd_step_gated(const SgdParams* params, const UpdateGate* gate, float* p, const float* g,
                              float* momentum_buf, std::int64_t n, std::uint16_t* p_bf16) = 0;
};

// The optimizer kernels of ops's device, queued in order with ops's calls (ops must outlive them):
// Ops::make_optimizer_kernels, which picks one of the two implementations below.
inline std::unique_ptr<OptimizerKernels> make_optimizer_kernels(Ops& ops) { return ops.make_optimizer_kernels(); }

// The host loops (scale_gated's scale runs on `ops`).
std::unique_ptr<OptimizerKernels> make_cpu_optimizer_kernels(Ops& ops);
// The CUDA kernels, queued on `stream` (CudaOps's); defined in microddp_kernels_cuda, whose CudaOps
// is its only caller.
std::unique_ptr<OptimizerKernels> make_cuda_optimizer_kernels(core::DeviceStream stream);

}  // namespace microddp::kernels
