// numerics.hpp — the numerical guards of a training step: gradient finiteness, the global gradient
// norm, gradient-norm clipping, the NaN policy (docs/reliability.md). The fault points that test
// them are the trainer's (ddp/step_faults.hpp); the verdict that applies them is ddp/numerics_verdict.hpp.
//
// Contract:
//   * grad_sum_squares() accumulates in double, so its result is finite exactly when every element
//     is finite (float's largest square, ~1.2e77, and any realistic count of them fit in double);
//     one pass gives both the finiteness verdict and the norm. Deterministic: fixed lane order.
//   * clip_factor() is PyTorch's clip_grad_norm_: min(1, max_norm / (norm + 1e-6)).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/enum_names.hpp"

namespace microddp::ddp {

// What the trainer does when the loss or the synchronised gradient of a step is not finite on any
// rank (the verdict is all-reduced, so every rank applies the policy at the same step).
enum class NanPolicy { Abort, Skip };
inline constexpr auto kNanPolicyNames =
    core::enum_names<NanPolicy>({{NanPolicy::Abort, "abort"}, {NanPolicy::Skip, "skip"}});
inline std::string_view nan_policy_name(NanPolicy p) { return kNanPolicyNames.name(p); }
// "abort" | "skip"; throws core::UsageError otherwise.
inline NanPolicy parse_nan_policy(std::string_view name) { return kNanPolicyNames.parse(name, "--on-nan"); }

// sum_i (double)g[i]^2, accumulated in double over 8 fixed lanes (vectorisable, deterministic).
double grad_sum_squares(const float* g, std::int64_t n);

// The factor the gradient is multiplied by: min(1, max_norm / (norm + 1e-6)), max_norm > 0. The eps
// (PyTorch's, torch/nn/utils/clip_grad.py) keeps the factor finite for a zero gradient and makes it
// slightly below max_norm/norm. The formula is kernels::clip_factor (elementwise.hpp), which a step
// replayed from a CUDA graph evaluates on the device: one formula, the same bits on both sides.
double clip_factor(double norm, double max_norm);

}  // namespace microddp::ddp
