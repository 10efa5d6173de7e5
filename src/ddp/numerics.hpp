// numerics.hpp — the numerical guards of a training step: gradient finiteness, the global gradient
// norm, gradient-norm clipping, and the fault-injection hooks that test them and the divergence
// check (docs/reliability.md).
//
// Contract:
//   * grad_sum_squares() accumulates in double, so its result is finite exactly when every element
//     is finite (float's largest square, ~1.2e77, and any realistic count of them fit in double);
//     one pass gives both the finiteness verdict and the norm. Deterministic: fixed lane order.
//   * clip_factor() is PyTorch's clip_grad_norm_: min(1, max_norm / (norm + 1e-6)).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace microddp::ddp {

// What the trainer does when the loss or the synchronised gradient of a step is not finite on any
// rank (the verdict is all-reduced, so every rank applies the policy at the same step).
enum class NanPolicy { Abort, Skip };
std::string_view nan_policy_name(NanPolicy p);
// "abort" | "skip"; throws core::UsageError otherwise.
NanPolicy parse_nan_policy(std::string_view name);

// sum_i (double)g[i]^2, accumulated in double over 8 fixed lanes (vectorisable, deterministic).
double grad_sum_squares(const float* g, std::int64_t n);

// PyTorch's epsilon in clip_grad_norm_ (torch/nn/utils/clip_grad.py): keeps the factor finite for
// a zero gradient and makes the factor slightly below max_norm/norm.
inline constexpr double kClipEps = 1e-6;
// The factor the gradient is multiplied by: min(1, max_norm / (norm + 1e-6)). max_norm > 0.
double clip_factor(double norm, double max_norm);

// Test hooks (hidden: set from MICRODDP_FAULT_* environment variables by `train`, or directly by
// tests). Steps are 1-based step numbers as printed in the progress lines (step N = the N-th
// optimizer step). Off when rank < 0.
struct FaultInjection {
  // MICRODDP_FAULT_NAN="rank:step[:input|grad]": at step `nan_step` rank `nan_rank` puts a NaN
  // into element 0 of its input batch (first micro-step; the default), or into element 0 of its
  // gradient after synchronisation (only that rank then sees it, so only the all-reduced verdict
  // makes the other ranks act).
  int nan_rank = -1;
  std::int64_t nan_step = 0;
  bool nan_in_grad = false;
  // MICRODDP_FAULT_PERTURB="rank:step[:param]": after the update of step `perturb_step`, rank
  // `perturb_rank` flips the lowest mantissa bit of element 0 of parameter `perturb_param`
  // (default layer_01.weight), just before that step's divergence check (if any).
  int perturb_rank = -1;
  std::int64_t perturb_step = 0;
  std::string perturb_param = "layer_01.weight";
};
// Reads MICRODDP_FAULT_NAN and MICRODDP_FAULT_PERTURB (throws core::UsageError when malformed).
FaultInjection faults_from_env();

}  // namespace microddp::ddp
