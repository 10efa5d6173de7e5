// mlp.cpp — forward, backward with gradient-ready callbacks, deterministic initialisation.
#include "model/mlp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace microddp::model {

FullMLP::FullMLP(const MlpConfig& config, std::int64_t max_rows, kernels::Ops& ops, core::Precision precision)
    : config_(config), precision_(precision), max_rows_(max_rows), ops_(ops) {
  MDDP_CHECK(max_rows >= 0, "negative max_rows");
  infos_ = param_layout(config);  // checks the shape
  parameter_count_ = model::parameter_count(infos_);
  params_ = kernels::OpsBuffer<float>(ops, model::flat_count(infos_));
  grads_ = kernels::OpsBuffer<float>(ops, model::flat_count(infos_));
  acts_.reserve(static_cast<std::size_t>(config.depth + 2));
  std::int64_t max_features = config.classes;
  for (std::int64_t layer = 0; layer <= config.depth; ++layer) {
    acts_.emplace_back(ops, max_rows * in_features(layer));
    max_features = std::max({max_features, in_features(layer), out_features(layer)});
  }
  acts_.emplace_back(ops, max_rows * config.classes);
  dy_a_ = kernels::OpsBuffer<float>(ops, max_rows * max_features);
  dy_b_ = kernels::OpsBuffer<float>(ops, max_rows * max_features);
  loss_ = kernels::OpsBuffer<float>(ops, 1);
  if (bf16()) {
    params_bf16_ = kernels::OpsBuffer<std::uint16_t>(ops, params_.count());
    std::int64_t largest_operand = max_rows * max_features;  // dy, and each layer's input
    for (std::int64_t layer = 0; layer <= config.depth; ++layer) {
      acts_bf16_.emplace_back(ops, max_rows * in_features(layer));
      largest_operand = std::max(largest_operand, in_features(layer) * out_features(layer));  // W
    }
    dy_bf16_ = kernels::OpsBuffer<std::uint16_t>(ops, max_rows * max_features);
    ops.reserve_bf16_gemm(largest_operand);
  }
  for (std::int64_t layer = 0; layer <= config.depth; ++layer) {
    char name[48];
    std::snprintf(name, sizeof name, "layer_%02lld forward", static_cast<long long>(layer));
    fwd_range_.emplace_back(name);
    std::snprintf(name, sizeof name, "layer_%02lld backward", static_cast<long long>(layer));
    bwd_range_.emplace_back(name);
  }
}

void FullMLP::init(std::uint64_t seed) {
  // Generated on the host (the same bits for every device), then copied to device() in one go.
  std::vector<float> host(static_cast<std::size_t>(params_.count()));
  for (const ParamInfo& p : infos_) {
    float* dst = host.data() + p.offset;
    if (p.is_bias) {
      std::fill(dst, dst + p.count, 0.0f);
      continue;
    }
    // He init keeps activation variance constant through ReLU layers (gain sqrt(2)); the output
    // layer has no ReLU after it (gain 1).
    const bool relu_follows = p.layer < config_.depth;
    const float std_dev = std::sqrt((relu_follows ? 2.0f : 1.0f) / static_cast<float>(p.cols));
    // Stream = the parameter's position in the layout: a pure function of (seed, parameter, element).
    const auto stream = static_cast<std::uint64_t>(p.index);
    for (std::int64_t i = 0; i < p.count; ++i)
      dst[i] = std_dev * core::normal01(seed, stream, static_cast<std::uint64_t>(i));
  }
  params_.from_host(host.data(), 0, params_.count());
}

void FullMLP::zero_grad() { ops_.zero(grads_.data(), grads_.count()); }

void FullMLP::set_grad_placement(GradPlacement* placement) {
  placement_ = placement;
  if (placement != nullptr) {
    grads_ = kernels::OpsBuffer<float>();  // the memory ZeRO-2 saves
  } else if (grads_.count() != params_.count()) {
    grads_ = kernels::OpsBuffer<float>(ops_, params_.count());  // zero-filled: padding stays zero
  }
}

const float* FullMLP::forward(const float* x, std::int64_t rows, const LayerHookFn& hook) {
  MDDP_CHECK(rows >= 0 && rows <= max_rows_, "forward with " << rows << " rows, model sized for " << max_rows_);
  rows_ = rows;
  if (x != acts_[0].data()) ops_.copy(acts_[0].data(), x, rows * config_.in_dim);
  if (bf16()) {
    // The weights' copy: made by the optimizer that wrote them when it could (bf16_params_written),
    // else here, once per forward.
    if (!bf16_params_current_)
      ops_.encode_wire16(kernels::Wire16::BF16, params_.data(), params_bf16_.data(), nullptr, params_.count());
    bf16_params_current_ = false;
    ops_.encode_wire16(kernels::Wire16::BF16, acts_[0].data(), acts_bf16_[0].data(), nullptr, rows * config_.in_dim);
  }
  for (std::int64_t layer = 0; layer <= config_.depth; ++layer) {
    if (hook) hook(static_cast<int>(layer), true);
    ops_.range_push(fwd_range_[static_cast<std::size_t>(layer)].c_str());
    const ParamInfo& w = weight(static_cast<int>(layer));
    const ParamInfo& b = bias(static_cast<int>(layer));
    float* out = acts_[static_cast<std::size_t>(layer + 1)].data();
    layer_forward(layer, rows, params_.data() + b.offset, out);
    // The next layer's GEMM operand, rounded once (the logits stay fp32: softmax reads them).
    if (bf16() && layer < config_.depth)
      ops_.encode_wire16(kernels::Wire16::BF16, out, acts_bf16_[static_cast<std::size_t>(layer + 1)].data(), nullptr,
                         rows * w.rows);
    ops_.range_pop();
    if (hook) hook(static_cast<int>(layer), false);
  }
  return acts_[static_cast<std::size_t>(config_.depth + 1)].data();
}

double FullMLP::backward(const std::int32_t* labels, float scale, const GradReadyFn& on_ready, const LayerHookFn& hook,
                         bool accumulate) {
  backward_into(labels, scale, loss_.data(), on_ready, hook, accumulate);
  ops_.synchronize();  // CudaOps reports a label out of range here
  float loss_value = 0.0f;
  loss_.to_host(&loss_value, 0, 1);
  return loss_value;
}

void FullMLP::backward_into(const std::int32_t* labels, float scale, float* loss_out, const GradReadyFn& on_ready,
                            const LayerHookFn& hook, bool accumulate) {
  MDDP_CHECK(placement_ == nullptr || !accumulate,
             "backward cannot accumulate gradients through a gradient placement (it overwrites)");
  const std::int64_t rows = rows_;
  float* dy = dy_a_.data();
  float* dx = dy_b_.data();
  ops_.softmax_xent(acts_[static_cast<std::size_t>(config_.depth + 1)].data(), labels, rows, config_.classes, scale, dy,
                    loss_out);
  for (std::int64_t layer = config_.depth; layer >= 0; --layer) {
    if (hook) hook(static_cast<int>(layer), true);
    ops_.range_push(bwd_range_[static_cast<std::size_t>(layer)].c_str());
    const ParamInfo& w = weight(static_cast<int>(layer));
    const ParamInfo& b = bias(static_cast<int>(layer));
    const float* in = acts_[static_cast<std::size_t>(layer)].data();
    // dy is the gradient w.r.t. this layer's output (after the ReLU mask was applied below).
    // dW(out, in) (+)= dy(rows, out)^T * in(rows, in) and db(out) (+)= the column sums of dy: one fused
    // call (CudaOps: one cublasLtMatmul with the bias-gradient epilogue, unless accumulating), except
    //  * bf16: the epilogue would sum its bf16 operand (the rounded dy), and the precision contract
    //    computes every gradient from fp32 values (mlp.hpp);
    //  * a gradient placement: it hands out a gradient's memory only after the previous gradient is
    //    ready (acquire() may wait for the collective that GradReadyFn launches: ZeRO-2), and the fused
    //    call would need dW's memory before db is ready.
    if (!bf16() && placement_ == nullptr) {
      ops_.gemm_bias_grad(w.rows, w.cols, rows, dy, in, grads_.data() + w.offset, grads_.data() + b.offset,
                          accumulate);
      if (on_ready) on_ready(b);
    } else {
      float* db = grad_target(b);
      if (!accumulate) ops_.zero(db, b.count);  // bias_grad accumulates
      ops_.bias_grad(db, dy, rows, w.rows);
      if (on_ready) on_ready(b);
      const float beta = accumulate ? 1.0f : 0.0f;
      if (bf16()) {
        ops_.encode_wire16(kernels::Wire16::BF16, dy, dy_bf16_.data(), nullptr, rows * w.rows);
        ops_.gemm_bf16(true, false, w.rows, w.cols, rows, 1.0f, dy_bf16_.data(),
                       acts_bf16_[static_cast<std::size_t>(layer)].data(), beta, grad_target(w));
      } else {
        ops_.gemm(true, false, w.rows, w.cols, rows, 1.0f, dy, in, beta, grad_target(w));
      }
    }
    if (on_ready) on_ready(w);
    if (layer > 0) {
      // dx(rows, in) = dy(rows, out) * W(out, in); then mask by the previous layer's ReLU.
      if (bf16()) {
        ops_.gemm_bf16(false, false, rows, w.cols, w.rows, 1.0f, dy_bf16_.data(), params_bf16_.data() + w.offset,
                       0.0f, dx);
      } else {
        ops_.gemm(false, false, rows, w.cols, w.rows, 1.0f, dy, params_.data() + w.offset, 0.0f, dx);
      }
      ops_.relu_backward(dx, in, rows * w.cols);
      std::swap(dy, dx);
    }
    ops_.range_pop();
    if (hook) hook(static_cast<int>(layer), false);
  }
}

void FullMLP::layer_forward(std::int64_t layer, std::int64_t rows, const float* bias, float* out) {
  const ParamInfo& w = weight(static_cast<int>(layer));
  const auto l = static_cast<std::size_t>(layer);
  const bool relu = layer < config_.depth;  // the output layer's logits have no ReLU
  // out(rows, out_f) = act(in(rows, in_f) * W(out_f, in_f)^T + bias): one fused call (CudaOps: one
  // cublasLtMatmul with the BIAS / RELU_BIAS epilogue instead of a GEMM and a bias kernel).
  if (bf16()) {
    ops_.gemm_bias_act_bf16(false, true, rows, w.rows, w.cols, acts_bf16_[l].data(), params_bf16_.data() + w.offset,
                            bias, out, relu);
  } else {
    ops_.gemm_bias_act(false, true, rows, w.rows, w.cols, acts_[l].data(), params_.data() + w.offset, bias, out, relu);
  }
}

double FullMLP::flops_per_step(std::int64_t rows) const {
  double flops = 0.0;
  for (std::int64_t layer = 0; layer <= config_.depth; ++layer) {
    const double mnk = 2.0 * static_cast<double>(rows) * static_cast<double>(in_features(layer)) *
                       static_cast<double>(out_features(layer));
    flops += mnk * (layer > 0 ? 3.0 : 2.0);  // forward + dW (+ dx except for layer 0)
  }
  return flops;
}

std::int64_t FullMLP::activation_bytes() const {
  std::int64_t n = dy_a_.count() + dy_b_.count() + loss_.count();
  for (const auto& a : acts_) n += a.count();
  std::int64_t halves = params_bf16_.count() + dy_bf16_.count();
  for (const auto& a : acts_bf16_) halves += a.count();
  return n * static_cast<std::int64_t>(sizeof(float)) + halves * static_cast<std::int64_t>(sizeof(std::uint16_t));
}

}  // namespace microddp::model
