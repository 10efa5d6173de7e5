// optimizer.hpp — optimizers over the flat parameter/gradient buffers.
// Contract: step() is one fused pass over all n parameters (the optimizer's own kernels,
// kernels/optimizer_kernels.hpp), allocates nothing, and is deterministic. State (moments, step
// count) is sized at construction and exposed for checkpoints.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"
#include "kernels/optimizer_kernels.hpp"

namespace microddp::model {

struct OptimizerConfig {
  std::string name = "adam";  // adam | adamw | sgd
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weight_decay = 0.0f;
  float momentum = 0.0f;  // sgd
  bool nesterov = false;  // sgd
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string_view name() const = 0;
  // One step over all state elements: begin_step(), then update_range over everything.
  void step(float* params, const float* grads) {
    begin_step();
    update_range(params, grads, 0, state_count());
  }
  // A step in pieces (sharded optimizers, ddp/zero): begin_step() advances the step count (bias
  // corrections) once; update_range() then updates `count` elements: parameters params[0..count)
  // from gradients grads[0..count) with state elements [state_offset, state_offset + count). Each
  // element's result is the same as in step(): the updates are elementwise.
  virtual void begin_step() { ++steps_; }
  virtual void update_range(float* params, const float* grads, std::int64_t state_offset, std::int64_t count) = 0;
  // Elements of each state buffer (the flat parameter count, or a shard's).
  virtual std::int64_t state_count() const = 0;
  std::int64_t steps_taken() const { return steps_; }

  // Checkpoint state API. A state buffer has the flat parameter layout (element i belongs to
  // parameter element i), so it can be saved per parameter like the parameters themselves. Its data
  // is memory of the Ops's device (copy with Ops::copy_to_host / copy_from_host).
  struct StateBuffer {
    std::string name;  // "exp_avg", "exp_avg_sq" (Adam/AdamW), "momentum" (SGD with momentum)
    float* data;
    std::int64_t count;
  };
  virtual std::vector<StateBuffer> state_buffers() { return {}; }
  // Restores the step count (Adam's bias corrections depend on it) after loading the buffers.
  void set_steps_taken(std::int64_t steps) { steps_ = steps; }
  // Bytes read+written by one step (for the GB/s report).
  virtual double bytes_per_step() const = 0;

  // The learning rate of the next step (begin_step(), or the next stage_gated_step()); the
  // configuration's until set. A schedule (model/lr_schedule.hpp) sets it before every step: the
  // step's scalars carry it to the device, so a replayed CUDA graph reads it too.
  void set_lr(float lr) { lr_ = lr; }
  float lr() const { return lr_; }

  // ---- a step decided on the device (the optimizer inside the step's CUDA graph, ddp/step_graph.hpp) ----
  // A replayed step runs its optimizer before the host knows whether the step is skipped, so the
  // step's scalars (Adam's bias corrections of step t) travel through device memory:
  //   stage_gated_step()   the host writes the scalars of step steps_taken() + 1 to host staging
  //                        memory, before each replay (the replay's copy reads them then);
  //   queue_gated_step()   queues the copy of the staged scalars to the device and the update of all
  //                        state_count() elements, gated by *gate (OptimizerKernels::update_gate): recorded once
  //                        into the graph, replayed every step;
  //   commit_gated_step()  after the verdict, for a step that was not skipped: the step count
  //                        advances exactly as step() advances it (begin_step(), nothing queued).
  // A gated step gives the bits of step() (with the eager clip scale before it).
  virtual void stage_gated_step() = 0;
  virtual void queue_gated_step(float* params, const float* grads, const kernels::UpdateGate* gate) = 0;
  void commit_gated_step() { begin_step(); }

  // --precision bf16: where every later update (step, update_range from state offset 0, the gated
  // step) also writes the updated weights rounded to bf16, in its own pass over them (OptimizerKernels::adam_step's
  // p_bf16): element i of the copy belongs to parameter element i, so only an optimizer whose state
  // covers the whole flat buffer (not a ZeRO shard) may be given one. nullptr: none (the default).
  void set_bf16_copy(std::uint16_t* p_bf16) { bf16_copy_ = p_bf16; }

  // The kernels this optimizer runs, queued in order with the Ops it was made with (an update decided
  // on the device also takes its gate and clip scale from here: ddp/replicated_update.hpp).
  kernels::OptimizerKernels& kernels() { return *kernels_; }

 protected:
  explicit Optimizer(kernels::Ops& ops) : kernels_(kernels::make_optimizer_kernels(ops)) {}
  // The copy's elements for state elements [state_offset, ...), or nullptr.
  std::uint16_t* bf16_copy_at(std::int64_t state_offset) const {
    return bf16_copy_ != nullptr ? bf16_copy_ + state_offset : nullptr;
  }
  std::int64_t steps_ = 0;
  float lr_ = 0.0f;  // set from the configuration by the derived constructor
  std::uint16_t* bf16_copy_ = nullptr;
  std::unique_ptr<kernels::OptimizerKernels> kernels_;
};

// state_count: elements of each state buffer (the flat parameter count; a shard's with ZeRO).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, std::int64_t state_count, kernels::Ops& ops);

// The state buffers an optimizer with this configuration keeps, in state_buffers() order:
// {"exp_avg", "exp_avg_sq"} for adam/adamw, {"momentum"} for SGD with momentum, {} otherwise. The one
// list of these names (checkpoints store and check them).
std::vector<std::string> optimizer_state_names(const OptimizerConfig& config);

class Adam final : public Optimizer {
 public:
  Adam(const OptimizerConfig& config, std::int64_t n, kernels::Ops& ops, bool decoupled);
  std::string_view name() const override { return decoupled_ ? "adamw" : "adam"; }
  void begin_step() override;
  void update_range(float* params, const float* grads, std::int64_t state_offset, std::int64_t count) override;
  std::int64_t state_count() const override { return n_; }
  double bytes_per_step() const override { return 28.0 * static_cast<double>(n_); }  // read p,g,m,v; write p,m,v
  std::vector<StateBuffer> state_buffers() override {
    const auto names = optimizer_state_names(config_);
    return {{names[0], m_.data(), m_.count()}, {names[1], v_.data(), v_.count()}};
  }
  void stage_gated_step() override;
  void queue_gated_step(float* params, const float* grads, const kernels::UpdateGate* gate) override;

 private:
  // The scalars of step t (bias corrections 1 - beta^t computed in double, then rounded).
  kernels::AdamParams params_for_step(std::int64_t t) const;
  OptimizerConfig config_;
  std::int64_t n_;
  kernels::Ops& ops_;
  bool decoupled_;
  kernels::AdamParams step_params_;  // set by begin_step()
  kernels::OpsBuffer<float> m_, v_;
  // The gated step's scalars: staged by the host, copied to the device by the replay.
  kernels::OpsHostBuffer<kernels::AdamParams> staged_;
  kernels::OpsBuffer<kernels::AdamParams> device_params_;
};

class Sgd final : public Optimizer {
 public:
  Sgd(const OptimizerConfig& config, std::int64_t n, kernels::Ops& ops);
  std::string_view name() const override { return "sgd"; }
  void update_range(float* params, const float* grads, std::int64_t state_offset, std::int64_t count) override;
  std::int64_t state_count() const override { return n_; }
  double bytes_per_step() const override { return (config_.momentum != 0.0f ? 20.0 : 12.0) * static_cast<double>(n_); }
  std::vector<StateBuffer> state_buffers() override {
    if (config_.momentum == 0.0f) return {};
    return {{optimizer_state_names(config_)[0], momentum_.data(), momentum_.count()}};
  }
  void stage_gated_step() override;
  void queue_gated_step(float* params, const float* grads, const kernels::UpdateGate* gate) override;

 private:
  kernels::SgdParams params() const;
  OptimizerConfig config_;
  std::int64_t n_;
  kernels::Ops& ops_;
  kernels::OpsBuffer<float> momentum_;
  kernels::OpsHostBuffer<kernels::SgdParams> staged_;  // as Adam's: the learning rate of each step
  kernels::OpsBuffer<kernels::SgdParams> device_params_;
};

}  // namespace microddp::model
