// elementwise.hpp — the per-element math of microddp, written once for CPU and GPU.
// Contract: every function is MDDP_HD inline and pure; the CPU loops in kernels/cpu and the CUDA
// kernels in kernels/cuda call exactly these, so the CPU unit tests check the formulas the GPU
// runs. Shapes are the callers' business; these act on single elements or single rows.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/host_device.hpp"
#include "core/reduce_op.hpp"

namespace microddp::kernels {

// ---- reductions (communication) ------------------------------------------------------------
// Combine one element; Mean combines like Sum (the division by n happens once at the end).
template <typename T>
MDDP_HD_INLINE T reduce_pair(core::ReduceOp op, T a, T b) {
  switch (op) {
    case core::ReduceOp::Max:
      return a > b ? a : b;
    case core::ReduceOp::Min:
      return a < b ? a : b;
    default:
      return a + b;
  }
}

// ---- the numerics verdict of a training step -------------------------------------------------
// A step's verdict: three doubles that one all-reduce (sum) agrees on. One rank's: the loss share of
// its micro-steps, and 1 or 0 for "the loss is not finite", "the gradient is not finite"; summed over
// ranks, the global loss and the number of ranks that saw each (DESIGN: the verdict rides in the loss
// all-reduce; counts are small integers, exact in double).
struct StepVerdict {
  double loss = 0.0;
  double loss_nonfinite = 0.0;
  double grad_nonfinite = 0.0;
};
// The step's numerics in device memory (ddp/numerics_verdict.hpp): the verdict all-reduced, the
// synchronised gradient's sum of squares (global), and this rank's own verdict.
struct StepNumerics {
  StepVerdict agreed;  // all-reduced (the collective's 3 doubles: agreed_doubles())
  double grad_sum_squares = 0.0;
  StepVerdict own;
};
static_assert(sizeof(StepVerdict) == 3 * sizeof(double), "StepVerdict is all-reduced as 3 contiguous doubles");
// The all-reduced doubles of *n (agreed.loss, agreed.loss_nonfinite, agreed.grad_nonfinite).
MDDP_HD_INLINE double* agreed_doubles(StepNumerics* n) { return &n->agreed.loss; }

// From a step's K micro-step losses (floats, this rank's share) and the sum of squares of the
// synchronised gradient: out->loss = the local loss, summed in double in micro-step order;
// out->loss_nonfinite = 1 if it is not finite, else 0; out->grad_nonfinite = 1 if the gradient sum of
// squares is not finite, else 0. One thread computes it (GPU) or the host (CPU), so both give the
// same bits.
// Finite test without <cmath>'s host/device overload questions: x - x is 0 exactly for finite x and
// NaN for NaN and +-Inf (IEEE arithmetic; we never compile with fast-math).
MDDP_HD_INLINE bool is_finite(double x) { return x - x == 0.0; }
MDDP_HD_INLINE void step_numerics(const float* losses, std::int64_t k, const double* grad_sumsq, StepVerdict* out) {
  double loss = 0.0;
  for (std::int64_t i = 0; i < k; ++i) loss += static_cast<double>(losses[i]);
  out->loss = loss;
  out->loss_nonfinite = is_finite(loss) ? 0.0 : 1.0;
  out->grad_nonfinite = is_finite(*grad_sumsq) ? 0.0 : 1.0;
}

// ---- activations ----------------------------------------------------------------------------
MDDP_HD_INLINE float relu(float x) { return x > 0.0f ? x : 0.0f; }
// Gradient of ReLU expressed through its *output* y (y > 0 <=> x > 0), so the forward input need
// not be kept: dx = dy * [y > 0].
MDDP_HD_INLINE float relu_backward(float dy, float y) { return y > 0.0f ? dy : 0.0f; }

// ---- optimizers -------------------------------------------------------------------------------
struct AdamParams {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;  // AdamW-style decoupled decay when decoupled == true
  bool decoupled = false;     // false: Adam (L2 folded into the gradient); true: AdamW
  // Bias corrections 1 - beta^t for the current step t, computed once per step by the caller.
  float bias_correction1 = 1.0f;
  float bias_correction2 = 1.0f;
};

// One Adam/AdamW update of one parameter element (p, m, v updated in place).
MDDP_HD_INLINE void adam_update(const AdamParams& a, float& p, float g, float& m, float& v) {
  if (!a.decoupled && a.weight_decay != 0.0f) g += a.weight_decay * p;
  m = a.beta1 * m + (1.0f - a.beta1) * g;
  v = a.beta2 * v + (1.0f - a.beta2) * g * g;
  const float m_hat = m / a.bias_correction1;
  const float v_hat = v / a.bias_correction2;
  if (a.decoupled && a.weight_decay != 0.0f) p -= a.lr * a.weight_decay * p;
  p -= a.lr * m_hat / (sqrtf(v_hat) + a.eps);
}

struct SgdParams {
  float lr = 1e-2f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

// One SGD(+momentum) update of one element; buf is the momentum buffer (unused if momentum == 0).
// Follows the common convention buf = momentum*buf + g (first step: buf = g, since buf starts 0).
MDDP_HD_INLINE void sgd_update(const SgdParams& s, float& p, float g, float& buf) {
  if (s.weight_decay != 0.0f) g += s.weight_decay * p;
  if (s.momentum != 0.0f) {
    buf = s.momentum * buf + g;
    g = s.nesterov ? g + s.momentum * buf : buf;
  }
  p -= s.lr * g;
}

// ---- an update decided on the device ------------------------------------------------------------
// A step replayed from a CUDA graph (ddp/step_graph.hpp) runs its optimizer before the host has seen
// the step's numerics verdict, so the two decisions the host makes in an eager step are made on the
// device from the same all-reduced numbers, with the same arithmetic: skip the update when any rank
// saw a non-finite loss or gradient (--on-nan), and clip the gradient by PyTorch's clip_grad_norm_
// factor min(1, max_norm / (norm + 1e-6)) (ddp/numerics.hpp; IEEE double sqrt and division are
// correctly rounded on both sides, so host and device get the same factor bit for bit).
inline constexpr double kClipEps = 1e-6;  // PyTorch's epsilon (torch/nn/utils/clip_grad.py)
MDDP_HD_INLINE double clip_factor(double norm, double max_norm) {
  const double c = max_norm / (norm + kClipEps);
  return c < 1.0 ? c : 1.0;  // std::min(1.0, c), NaN included (gives 1)
}
struct UpdateGate {
  float clip = 1.0f;      // the gradient is multiplied by clip before the update when clip < 1
  std::int32_t skip = 0;  // 1: no update at all (parameters and optimizer state stay as they were)
};
// From the step's numerics after their all-reduce (the agreed verdict and the global gradient's sum
// of squares); max_norm <= 0: no clipping.
MDDP_HD_INLINE UpdateGate update_gate(const StepNumerics& numerics, double max_norm) {
  UpdateGate gate;
  gate.skip = numerics.agreed.loss_nonfinite != 0.0 || numerics.agreed.grad_nonfinite != 0.0 ? 1 : 0;
  if (max_norm > 0.0) gate.clip = static_cast<float>(clip_factor(sqrt(numerics.grad_sum_squares), max_norm));
  return gate;
}

// ---- softmax cross-entropy (row pieces) -------------------------------------------------------
// One row of logits x (classes) with label t. Stable form: with M = max_j x_j and S = sum_j e_j,
// e_j = exp(x_j - M) (so every e_j <= 1 and S >= 1, no overflow even for logits of 1e4):
//   loss = -log softmax(x)_t = (M - x_t) + log S
//   dx_j = scale * (e_j / S - [j == t])
// The CPU loop runs these serially over a row; the CUDA kernel runs them per lane and combines the
// partial maxima / sums with xent_max / ordinary addition in a fixed warp tree.
MDDP_HD_INLINE float xent_max(float a, float b) { return a > b ? a : b; }
MDDP_HD_INLINE float xent_exp(float logit, float row_max) { return expf(logit - row_max); }
// (M - x_t) first: both are near each other for confident predictions, and their difference is
// exact (Sterbenz), whereas M + log S - x_t would round M + log S at the scale of M first.
MDDP_HD_INLINE float xent_row_loss(float label_logit, float row_max, float sum_exp) {
  return (row_max - label_logit) + logf(sum_exp);
}
// exp_term = xent_exp(x_j, M); inv_sum_exp = 1 / S.
MDDP_HD_INLINE float xent_grad(float exp_term, float inv_sum_exp, bool is_label, float scale) {
  return scale * (exp_term * inv_sum_exp - (is_label ? 1.0f : 0.0f));
}
MDDP_HD_INLINE bool xent_label_ok(std::int32_t label, std::int64_t classes) {
  return label >= 0 && static_cast<std::int64_t>(label) < classes;
}

// ---- bfloat16 conversion ----------------------------------------------------------------------
// bf16 is the top 16 bits of an IEEE float32 (same exponent range, 8-bit significand). Stored as
// uint16_t so plain C++ headers need no CUDA type.
MDDP_HD_INLINE std::uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
MDDP_HD_INLINE float float_from_bits(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
// Round to nearest, ties to even (what __float2bfloat16_rn does); overflow rounds to +-inf;
// NaN stays NaN (quiet bit 0x0040 forced, since truncating the payload could leave an infinity).
MDDP_HD_INLINE std::uint16_t float_to_bf16_bits(float x) {
  const std::uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const std::uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding_bias) >> 16);
}
MDDP_HD_INLINE float bf16_bits_to_float(std::uint16_t b) {
  return float_from_bits(static_cast<std::uint32_t>(b) << 16);
}

// ---- IEEE half (fp16) conversion ------------------------------------------------------------
// fp16: 1 sign, 5 exponent (bias 15), 10 significand bits; largest finite 65504, smallest normal
// 2^-14, subnormals down to 2^-24. Round to nearest, ties to even (what __float2half_rn does):
// |x| >= 65520 (halfway between 65504 and the next power 65536) rounds to +-inf, values below
// 2^-25 round to +-0, NaN stays a quiet NaN. Decoding is exact (every half is a float).
MDDP_HD_INLINE std::uint16_t float_to_f16_bits(float x) {
  const std::uint32_t u = float_bits(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520 (or inf): inf
  if (a >= 0x38800000u) {  // normal half (|x| >= 2^-14): rebias the exponent by 127 - 15 = 112
    std::uint32_t h = a - 0x38000000u;
    h += 0x0fffu + ((h >> 13) & 1u);  // ties to even on the 13 dropped bits; a carry bumps the exponent
    return static_cast<std::uint16_t>(sign | (h >> 13));
  }
  if (a < 0x33000000u) return static_cast<std::uint16_t>(sign);  // < 2^-25: to zero (2^-25 itself ties to even 0)
  // Subnormal half: h * 2^-24 with h = significand (implicit bit included) >> (126 - exponent).
  const std::uint32_t e = a >> 23;
  const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126u - e;  // 14 .. 24
  std::uint32_t h = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (h & 1u))) ++h;  // may reach 0x400: the smallest normal, correctly
  return static_cast<std::uint16_t>(sign | h);
}
MDDP_HD_INLINE float f16_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return float_from_bits(sign | 0x7f800000u | (m << 13));  // inf, NaN
  if (e == 0u) {  // zero or subnormal: m * 2^-24, exact in float
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;
    return sign != 0u ? -v : v;
  }
  return float_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

// ---- 16-bit wire formats of gradient compression ----------------------------------------------
enum class Wire16 : std::uint8_t { F16, BF16 };
MDDP_HD_INLINE std::uint16_t wire16_encode(Wire16 f, float x) {
  return f == Wire16::F16 ? float_to_f16_bits(x) : float_to_bf16_bits(x);
}
MDDP_HD_INLINE float wire16_decode(Wire16 f, std::uint16_t h) {
  return f == Wire16::F16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
}
// One element of an encode with error feedback: *out = encode(x); returns x - decode(*out), the
// rounding error this rank keeps for its next step.
MDDP_HD_INLINE float wire16_encode_residual(Wire16 f, float x, std::uint16_t* out) {
  *out = wire16_encode(f, x);
  return x - wire16_decode(f, *out);
}
// One reduction hop on 16-bit data: decode both, combine in fp32, round once back to 16 bits.
MDDP_HD_INLINE std::uint16_t wire16_reduce_pair(Wire16 f, core::ReduceOp op, std::uint16_t a, std::uint16_t b) {
  return wire16_encode(f, reduce_pair(op, wire16_decode(f, a), wire16_decode(f, b)));
}

}  // namespace microddp::kernels
