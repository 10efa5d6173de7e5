// compression_config.hpp — how gradients travel: the --grad-compression settings and their checks.
//
//   none      fp32 all-reduce of the gradient (the default)
//   fp16      16-bit IEEE half on the wire, fp32 accumulation where the backend allows
//   bf16      bfloat16 on the wire (fp32's exponent range, 8-bit significand), fp32 accumulation
//   powersgd  rank-r approximation of each weight matrix (Vogels et al., NeurIPS 2019), fp32 wire
//
// Error feedback (on by default for every lossy mode): each rank adds the previous step's local
// compression error to its gradient before compressing, so nothing is lost for good, only delayed.
// docs/compression.md explains the modes, their costs and the measurements.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace microddp::ddp {

enum class CompressionMode { None, Fp16, Bf16, PowerSgd };

// Every member is a row of ddp/train_config_fields.hpp (the ranks must agree on all of them).
struct GradCompressionConfig {
  std::string mode = "none";             // --grad-compression none|fp16|bf16|powersgd
  std::int64_t powersgd_rank = 4;        // --powersgd-rank R (Vogels et al. reach fp32 accuracy at rank 2-4)
  std::int64_t powersgd_start_step = 0;  // --powersgd-start-step K: steps [0, K) are uncompressed
  bool error_feedback = true;            // --error-feedback on|off (lossy modes; ignored for none)
};

std::vector<std::string_view> compression_modes();
// "none" | "fp16" | "bf16" | "powersgd"; anything else is a core::UsageError listing the choices.
CompressionMode parse_compression_mode(std::string_view name);
std::string_view compression_mode_name(CompressionMode mode);
// Throws core::UsageError for an unknown mode, a rank < 1, a negative start step, or a PowerSGD
// setting given with a mode that does not use it (`explicit_powersgd`: the user set one).
void validate_compression(const GradCompressionConfig& c, bool explicit_powersgd = false);

}  // namespace microddp::ddp
