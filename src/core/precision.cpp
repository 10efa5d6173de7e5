// precision.cpp — see precision.hpp.
#include "core/precision.hpp"

#include <string>

#include "core/error.hpp"

namespace microddp::core {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::Fp32:
      return "fp32";
    case Precision::Tf32:
      return "tf32";
    case Precision::Bf16:
      return "bf16";
  }
  return "?";
}

Precision parse_precision(std::string_view name) {
  if (name == "fp32") return Precision::Fp32;
  if (name == "tf32") return Precision::Tf32;
  if (name == "bf16") return Precision::Bf16;
  MDDP_USAGE_CHECK(false, "--precision must be fp32, tf32 or bf16, got '" << std::string(name) << "'");
  return Precision::Fp32;
}

}  // namespace microddp::core
