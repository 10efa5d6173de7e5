// optimizer.cpp — Adam/AdamW and SGD(+momentum) as one fused pass over the flat buffers.
#include "model/optimizer.hpp"

#include <cmath>

#include "core/error.hpp"

namespace microddp::model {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, std::int64_t param_count, kernels::Ops& ops) {
  if (config.name == "adam") return std::make_unique<Adam>(config, param_count, ops, false);
  if (config.name == "adamw") return std::make_unique<Adam>(config, param_count, ops, true);
  if (config.name == "sgd") return std::make_unique<Sgd>(config, param_count, ops);
  MDDP_USAGE_CHECK(false, "unknown optimizer '" << config.name << "' (choose adam, adamw or sgd)");
  return nullptr;
}

std::vector<std::string> optimizer_state_names(const OptimizerConfig& config) {
  if (config.name == "adam" || config.name == "adamw") return {"exp_avg", "exp_avg_sq"};
  if (config.name == "sgd" && config.momentum != 0.0f) return {"momentum"};
  return {};
}

Adam::Adam(const OptimizerConfig& config, std::int64_t n, kernels::Ops& ops, bool decoupled)
    : Optimizer(ops),
      config_(config),
      n_(n),
      ops_(ops),
      decoupled_(decoupled),
      m_(ops, n),
      v_(ops, n),
      staged_(ops, 1),
      device_params_(ops, 1) {
  lr_ = config.lr;
}

kernels::AdamParams Adam::params_for_step(std::int64_t t) const {
  kernels::AdamParams a;
  a.lr = lr_;
  a.beta1 = config_.beta1;
  a.beta2 = config_.beta2;
  a.eps = config_.eps;
  a.weight_decay = config_.weight_decay;
  a.decoupled = decoupled_;
  // Bias corrections computed once per step in double, then rounded (same on every rank/device).
  a.bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(config_.beta1), static_cast<double>(t)));
  a.bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(config_.beta2), static_cast<double>(t)));
  return a;
}

void Adam::begin_step() {
  ++steps_;
  step_params_ = params_for_step(steps_);
}

void Adam::stage_gated_step() { staged_[0] = params_for_step(steps_ + 1); }

void Adam::queue_gated_step(float* params, const float* grads, const kernels::UpdateGate* gate) {
  ops_.copy_from_host_async(device_params_.data(), staged_.data(), sizeof(kernels::AdamParams));
  kernels_->adam_step_gated(device_params_.data(), gate, params, grads, m_.data(), v_.data(), n_, bf16_copy_at(0));
}

void Adam::update_range(float* params, const float* grads, std::int64_t state_offset, std::int64_t count) {
  MDDP_CHECK(state_offset >= 0 && count >= 0 && state_offset + count <= n_,
             "Adam update of state [" << state_offset << ", " << state_offset + count << ") outside " << n_);
  if (count == 0) return;
  kernels_->adam_step(step_params_, params, grads, m_.data() + state_offset, v_.data() + state_offset, count,
                 bf16_copy_at(state_offset));
}

Sgd::Sgd(const OptimizerConfig& config, std::int64_t n, kernels::Ops& ops)
    : Optimizer(ops),
      config_(config),
      n_(n),
      ops_(ops),
      momentum_(ops, config.momentum != 0.0f ? n : 0),
      staged_(ops, 1),
      device_params_(ops, 1) {
  lr_ = config.lr;
}

kernels::SgdParams Sgd::params() const {
  kernels::SgdParams s;
  s.lr = lr_;
  s.momentum = config_.momentum;
  s.weight_decay = config_.weight_decay;
  s.nesterov = config_.nesterov;
  return s;
}

void Sgd::update_range(float* params, const float* grads, std::int64_t state_offset, std::int64_t count) {
  MDDP_CHECK(state_offset >= 0 && count >= 0 && state_offset + count <= n_,
             "SGD update of state [" << state_offset << ", " << state_offset + count << ") outside " << n_);
  if (count == 0) return;
  kernels_->sgd_step(this->params(), params, grads, config_.momentum != 0.0f ? momentum_.data() + state_offset : nullptr,
                count, bf16_copy_at(state_offset));
}

void Sgd::stage_gated_step() { staged_[0] = params(); }

void Sgd::queue_gated_step(float* params, const float* grads, const kernels::UpdateGate* gate) {
  ops_.copy_from_host_async(device_params_.data(), staged_.data(), sizeof(kernels::SgdParams));
  kernels_->sgd_step_gated(device_params_.data(), gate, params, grads, config_.momentum != 0.0f ? momentum_.data() : nullptr,
                      n_, bf16_copy_at(0));
}

}  // namespace microddp::model
