// precision.hpp — `--precision fp32|tf32|bf16`: the arithmetic of the model's GEMMs.
//   fp32  every operand and sum in IEEE single precision (the CPU's and the default GPU path).
//   tf32  GPU only: cuBLAS rounds GEMM operands to TF32 (10-bit mantissa) on tensor cores, sums in fp32.
//   bf16  mixed precision: GEMM operands in bfloat16 (8-bit mantissa: the weights rounded once per
//         forward, each layer's input and upstream gradient rounded as produced), products summed in
//         fp32; master weights, gradients, optimizer state, bias, ReLU, softmax and loss stay fp32.
//         On the GPU the GEMMs run on bf16 tensor cores (cublasGemmEx); on the CPU the same operands
//         are decoded and multiplied by sgemm: the bf16 reference the GPU is tested against.
// Why it lives in core: the app parses it, the trainer agrees on it, the model and the compute ops
// act on it; all of them may include core.
#pragma once

#include <string_view>

#include "core/enum_names.hpp"

namespace microddp::core {

enum class Precision { Fp32, Tf32, Bf16 };
inline constexpr auto kPrecisionNames =
    enum_names<Precision>({{Precision::Fp32, "fp32"}, {Precision::Tf32, "tf32"}, {Precision::Bf16, "bf16"}});

inline std::string_view precision_name(Precision p) { return kPrecisionNames.name(p); }
// "fp32" | "tf32" | "bf16"; anything else is a core::UsageError naming the choices.
inline Precision parse_precision(std::string_view name) { return kPrecisionNames.parse(name, "--precision"); }

}  // namespace microddp::core
