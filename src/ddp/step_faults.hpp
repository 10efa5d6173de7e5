// step_faults.hpp — the training step's named fault points (test hooks, core/fault_plan.hpp): which
// fault fires at which step on this rank, and the perturbation of a parameter.
//
// Faults are armed in TrainConfig::faults by tests, or by `microddp train` from MICRODDP_FAULT_NAN /
// MICRODDP_FAULT_PERTURB (app/fault_env.hpp). Each acts on the armed rank only, at the armed step;
// occurrence = the 1-based step number as printed, so step N is the N-th optimizer step.
// Contract: with an empty plan (every real run) each question costs one emptiness check and
// allocates nothing, so the points may sit inside the step.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/fault_plan.hpp"
#include "model/mlp.hpp"

namespace microddp::ddp {

namespace trainer_fault_point {
// After the first micro-step's batch is filled: element 0 of this rank's input becomes NaN.
inline constexpr std::string_view kNanInput = "nan_input";
// After gradient synchronisation: element 0 of this rank's gradient becomes NaN (only this rank's
// copy, so only the all-reduced verdict makes the other ranks act).
inline constexpr std::string_view kNanGradient = "nan_gradient";
// After the update, before that step's divergence check: the lowest mantissa bit of element 0 of
// the parameter named by the fault's argument ("layer_01.weight") flips.
inline constexpr std::string_view kPerturbParameter = "perturb_parameter";
}  // namespace trainer_fault_point

class StepFaults {
 public:
  // `plan` must outlive this object (it is the trainer's configuration's).
  StepFaults(const core::FaultPlan& plan, int rank) : plan_(plan), rank_(rank) {}

  // At 0-based step `step` (plans count 1-based):
  bool nan_input(std::int64_t step) const { return at(trainer_fault_point::kNanInput, step) != nullptr; }
  bool nan_gradient(std::int64_t step) const { return at(trainer_fault_point::kNanGradient, step) != nullptr; }
  // The armed perturbation (its argument names the parameter), or nullptr.
  const core::ArmedFault* perturb_parameter(std::int64_t step) const {
    return at(trainer_fault_point::kPerturbParameter, step);
  }
  // The perturbation: flips the lowest mantissa bit of element 0 of parameter `name` (any device);
  // a name that is no parameter is a core::Error.
  static void flip_parameter_bit(model::FullMLP& model, const std::string& name);

 private:
  const core::ArmedFault* at(std::string_view point, std::int64_t step) const {
    return plan_.empty() ? nullptr : plan_.fires(point, rank_, step + 1);
  }
  const core::FaultPlan& plan_;
  int rank_;
};

}  // namespace microddp::ddp
