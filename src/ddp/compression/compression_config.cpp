// compression_config.cpp — mode names and the checks of the compression settings.
#include "ddp/compression/compression_config.hpp"

#include "core/error.hpp"

namespace microddp::ddp {

std::vector<std::string_view> compression_modes() { return {"none", "fp16", "bf16", "powersgd"}; }

CompressionMode parse_compression_mode(std::string_view name) {
  if (name == "none") return CompressionMode::None;
  if (name == "fp16") return CompressionMode::Fp16;
  if (name == "bf16") return CompressionMode::Bf16;
  if (name == "powersgd") return CompressionMode::PowerSgd;
  MDDP_USAGE_CHECK(false, "unknown --grad-compression '" << name << "' (choose none, fp16, bf16, powersgd)");
  return CompressionMode::None;
}

std::string_view compression_mode_name(CompressionMode mode) {
  switch (mode) {
    case CompressionMode::None:
      return "none";
    case CompressionMode::Fp16:
      return "fp16";
    case CompressionMode::Bf16:
      return "bf16";
    case CompressionMode::PowerSgd:
      return "powersgd";
  }
  return "?";
}

void validate_compression(const GradCompressionConfig& c, bool explicit_powersgd) {
  const CompressionMode mode = parse_compression_mode(c.mode);
  MDDP_USAGE_CHECK(c.powersgd_rank >= 1 && c.powersgd_rank <= 4096,
                   "--powersgd-rank must be in [1, 4096], got " << c.powersgd_rank);
  MDDP_USAGE_CHECK(c.powersgd_start_step >= 0, "--powersgd-start-step must be >= 0, got " << c.powersgd_start_step);
  MDDP_USAGE_CHECK(!explicit_powersgd || mode == CompressionMode::PowerSgd,
                   "--powersgd-rank / --powersgd-start-step need --grad-compression powersgd (got '" << c.mode << "')");
}

}  // namespace microddp::ddp
