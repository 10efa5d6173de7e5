// step_faults.cpp — the parameter perturbation of the fault point perturb_parameter.
#include "ddp/step_faults.hpp"

#include <bit>

#include "core/error.hpp"

namespace microddp::ddp {

void StepFaults::flip_parameter_bit(model::FullMLP& model, const std::string& name) {
  for (const auto& p : model.params()) {
    if (p.name != name) continue;
    float x = 0.0f;  // one element through explicit copies: works on every device
    model.param_buffer().to_host(&x, p.offset, 1);
    x = std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) ^ 1u);  // lowest mantissa bit
    model.param_buffer().from_host(&x, p.offset, 1);
    return;
  }
  MDDP_CHECK(false, "fault point " << trainer_fault_point::kPerturbParameter
                                   << " (MICRODDP_FAULT_PERTURB) names no parameter '" << name << "'");
}

}  // namespace microddp::ddp
