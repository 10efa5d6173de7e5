// mlp.hpp — FullMLP: depth x [Linear + ReLU], then Linear to the classes; softmax cross-entropy.
//
// Layers: layer 0 is Linear(in_dim, width), layers 1..depth-1 are Linear(width, width), each
// followed by ReLU; layer `depth` is Linear(width, classes) producing logits. Weights are stored
// PyTorch-style, W: (out, in) row-major, so y = x W^T + b.
//
// Memory contract (docs/design.md):
//   * All parameters live in ONE flat buffer and all gradients in ONE flat gradient buffer with
//     the same layout; each parameter is a (offset, count) view into them.
//   * The layout is model::param_layout (param_layout.hpp): gradient-ready order b_L, W_L, ...,
//     b_0, W_0, every parameter 256-byte aligned with zero padding between them.
//   * Activations and workspaces are allocated once, for at most max_rows rows.
//   * Every buffer lives in the memory of the Ops's device (kernels/ops_buffer.hpp): host memory
//     with CpuOps, GPU memory with CudaOps. Pointers from param_data(), grad_data(), input() are
//     device pointers; the host reaches the values only through the buffers' to_host()/from_host().
//   * backward() ACCUMULATES into the gradient buffer (gradient accumulation); zero_grad() clears.
//   * A GradPlacement may take the gradients elsewhere (ZeRO-2's bucket pool): the flat gradient
//     buffer is then freed and backward overwrites wherever the placement says.
//   * Initialisation is a pure function of (seed, parameter index, element index).
//   * Precision (core/precision.hpp): with bf16 the GEMMs take bfloat16 operands (Ops::gemm_bf16,
//     gemm_bias_act_bf16):
//     forward rounds the whole flat parameter buffer to a bf16 copy first (one pass: whatever wrote
//     the parameters — init, a broadcast, a checkpoint, ZeRO's all-gather — the copy is of the values
//     this forward uses) unless the replicated optimizer made that copy in its own pass
//     (bf16_params_written), each layer's input is rounded as it is produced, and
//     backward rounds each upstream gradient once for its two GEMMs. GEMM outputs, bias, ReLU (its
//     mask reads the fp32 activations), softmax, loss and every gradient stay fp32. fp32 and tf32
//     build no bf16 buffers (tf32 is the Ops's GEMM mode, not the model's).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/precision.hpp"
#include "core/tensor_view.hpp"
#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"
#include "model/param_layout.hpp"

namespace microddp::model {

// Called by backward() the moment a parameter's gradient is final for this micro-step.
using GradReadyFn = std::function<void(const ParamInfo&)>;
// Called around each layer's forward/backward compute (for per-layer trace events).
using LayerHookFn = std::function<void(int layer, bool begin)>;

// Where backward writes parameter gradients instead of the flat gradient buffer. acquire() is called
// right before backward first writes a parameter's gradient (in gradient-ready order, after the
// previous parameter's GradReadyFn) and returns param.count floats of device() memory, which
// backward then OVERWRITES. It may block or order the compute stream until that memory is free:
// this is how ZeRO-2 recycles a few bucket-sized buffers through one backward (ddp/zero/zero_sync.hpp).
class GradPlacement {
 public:
  virtual ~GradPlacement() = default;
  virtual float* acquire(const ParamInfo& param) = 0;
};

class FullMLP {
 public:
  FullMLP(const MlpConfig& config, std::int64_t max_rows, kernels::Ops& ops,
          core::Precision precision = core::Precision::Fp32);

  const MlpConfig& config() const { return config_; }
  core::Precision precision() const { return precision_; }
  std::int64_t num_layers() const { return config_.depth + 1; }
  // Elements of the flat parameter / gradient buffers: the parameters plus the alignment padding
  // (param_layout.hpp). Optimizers, collectives and hashes run over all of them.
  std::int64_t flat_count() const { return params_.count(); }
  // Parameters of the model (what a report says), padding not counted.
  std::int64_t parameter_count() const { return parameter_count_; }
  // Parameters in gradient-ready order.
  const std::vector<ParamInfo>& params() const { return infos_; }
  const ParamInfo& weight(int layer) const { return infos_[static_cast<std::size_t>(2 * (config_.depth - layer) + 1)]; }
  const ParamInfo& bias(int layer) const { return infos_[static_cast<std::size_t>(2 * (config_.depth - layer))]; }

  // The mutable accessors of the parameters also forget that the bf16 copy is current (see
  // bf16_params_written): whoever takes a writable pointer may change the weights.
  float* param_data() {
    bf16_params_current_ = false;
    return params_.data();
  }
  const float* param_data() const { return params_.data(); }
  float* grad_data() { return grads_.data(); }
  const float* grad_data() const { return grads_.data(); }
  core::TensorView param_view() {
    bf16_params_current_ = false;
    return params_.view();
  }
  core::TensorView grad_view() { return grads_.view(); }
  // Where the buffers live (the Ops's device), and the buffers themselves for explicit host copies.
  core::Device device() const { return ops_.device(); }
  kernels::OpsBuffer<float>& param_buffer() {
    bf16_params_current_ = false;
    return params_;
  }
  const kernels::OpsBuffer<float>& param_buffer() const { return params_; }
  kernels::OpsBuffer<float>& grad_buffer() { return grads_; }
  const kernels::OpsBuffer<float>& grad_buffer() const { return grads_; }

  // --precision bf16: the rounded copy of the flat parameters the GEMMs read (nullptr otherwise). An
  // optimizer that writes it while it updates the weights (OptimizerKernels::adam_step's p_bf16) calls
  // bf16_params_written() after queuing that update: the next forward then skips its own rounding
  // pass. The promise lasts until that forward (later micro-steps round again) or until a mutable
  // accessor above hands out the weights, whichever comes first.
  std::uint16_t* bf16_param_copy() { return bf16() ? params_bf16_.data() : nullptr; }
  void bf16_params_written() { bf16_params_current_ = bf16(); }
  // Whether the next forward rounds the weights into their bf16 copy itself (bf16, and the copy not
  // written since the weights last changed): a decision a CUDA graph's capture bakes in.
  bool forward_rounds_weights() const { return bf16() && !bf16_params_current_; }
  // For a writer through a pointer taken earlier (the CPU's host view is the live buffer): the
  // weights changed, the next forward rounds them.
  void params_changed() { bf16_params_current_ = false; }

  // He (Kaiming-normal) initialisation for ReLU layers, LeCun for the output layer; biases 0.
  void init(std::uint64_t seed);
  void zero_grad();
  // nullptr (the default): gradients live in the flat gradient buffer. Otherwise the flat gradient
  // buffer is FREED (grad_data() is null, grad_view() empty) and every backward must overwrite
  // (accumulate == false): accumulating would need the memory the placement exists to save. Setting
  // nullptr again re-allocates a zeroed flat gradient buffer. The placement must outlive its use.
  void set_grad_placement(GradPlacement* placement);

  // The model's input buffer (max_rows, in_dim) on device(): on the CPU data loaders write here to
  // skip a copy; on a GPU the trainer uploads into it.
  float* input() { return acts_[0].data(); }

  // x(rows, in_dim) on device() -> logits(rows, classes); returns a device pointer to the logits
  // (owned by the model).
  const float* forward(const float* x, std::int64_t rows, const LayerHookFn& hook = nullptr);
  // Softmax cross-entropy on the last forward's logits with loss scale `scale` (1 / GLOBAL batch):
  // returns this rank's share of the global loss, then backpropagates, accumulating gradients and
  // calling on_ready for every parameter in gradient-ready order.
  // accumulate == false OVERWRITES the gradients instead (the first micro-step of a step): it saves
  // a zero_grad() pass over the whole gradient buffer, which for large models costs as much as a
  // few percent of the step (a memory-bound memset of 4 bytes per parameter).
  // labels: device() memory. Reading the loss back synchronises the Ops (on a GPU: once per call).
  double backward(const std::int32_t* labels, float scale, const GradReadyFn& on_ready,
                  const LayerHookFn& hook = nullptr, bool accumulate = true);
  // The same without waiting: this rank's share of the loss goes to *loss_out (one float of device()
  // memory) and nothing is read back, so a GPU step can queue its whole backward (the trainer reads
  // the loss at its one synchronisation; a bad label is reported there too).
  void backward_into(const std::int32_t* labels, float scale, float* loss_out, const GradReadyFn& on_ready,
                     const LayerHookFn& hook = nullptr, bool accumulate = true);

  // FLOPs of one forward+backward over `rows` rows (GEMMs only: 2*m*n*k each, 3 GEMMs per layer
  // backward except the first layer's unused input gradient).
  double flops_per_step(std::int64_t rows) const;
  // Bytes of the activations, upstream-gradient workspaces and loss buffer (memory reports), the
  // bf16 copies of the weights, activations and upstream gradient included.
  std::int64_t activation_bytes() const;

 private:
  // Where backward writes `p`'s gradient: the flat gradient buffer, or the placement's memory.
  float* grad_target(const ParamInfo& p) {
    return placement_ != nullptr ? placement_->acquire(p) : grads_.data() + p.offset;
  }
  std::int64_t in_features(std::int64_t layer) const { return layer == 0 ? config_.in_dim : config_.width; }
  std::int64_t out_features(std::int64_t layer) const {
    return layer == config_.depth ? config_.classes : config_.width;
  }
  bool bf16() const { return precision_ == core::Precision::Bf16; }
  // out(rows, out_f) = act(in(rows, in_f) W^T + bias) for `layer` (ReLU except for the output
  // layer), in the model's precision (bf16: from the rounded copies of the layer's input and weight).
  void layer_forward(std::int64_t layer, std::int64_t rows, const float* bias, float* out);

  MlpConfig config_;
  core::Precision precision_;
  std::int64_t max_rows_;
  kernels::Ops& ops_;
  std::vector<ParamInfo> infos_;
  std::int64_t parameter_count_ = 0;
  kernels::OpsBuffer<float> params_;
  kernels::OpsBuffer<float> grads_;
  GradPlacement* placement_ = nullptr;
  // acts_[l] is the input of layer l, (rows, in_features(l)); acts_[L+1] are the logits.
  std::vector<kernels::OpsBuffer<float>> acts_;
  kernels::OpsBuffer<float> dy_a_, dy_b_;  // ping-pong upstream gradients, (rows, max features)
  kernels::OpsBuffer<float> loss_;         // 1 element
  // bf16 only (empty otherwise): the rounded copies the GEMMs read. params_bf16_ mirrors the flat
  // parameter buffer; acts_bf16_[l] is layer l's input; dy_bf16_ the current upstream gradient.
  kernels::OpsBuffer<std::uint16_t> params_bf16_;
  bool bf16_params_current_ = false;  // params_bf16_ holds the rounding of params_ (bf16_params_written)
  std::vector<kernels::OpsBuffer<std::uint16_t>> acts_bf16_;
  kernels::OpsBuffer<std::uint16_t> dy_bf16_;
  std::int64_t rows_ = 0;                  // rows of the last forward
  // Profiler range names ("layer_03 forward"), built once: Ops::range_push keeps the pointer.
  std::vector<std::string> fwd_range_, bwd_range_;
};

}  // namespace microddp::model
