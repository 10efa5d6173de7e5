// numerics.cpp — gradient sum of squares, clip factor, NaN policy names.
#include "ddp/numerics.hpp"

#include "core/error.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::ddp {

std::string_view nan_policy_name(NanPolicy p) { return p == NanPolicy::Skip ? "skip" : "abort"; }

NanPolicy parse_nan_policy(std::string_view name) {
  if (name == "abort") return NanPolicy::Abort;
  if (name == "skip") return NanPolicy::Skip;
  MDDP_USAGE_CHECK(false, "--on-nan must be abort or skip, got '" << name << "'");
  return NanPolicy::Abort;  // not reached
}

double grad_sum_squares(const float* g, std::int64_t n) {
  // One implementation for the trainer (via CpuOps::sum_squares) and this host helper.
  return kernels::host_sum_squares(g, n);
}

double clip_factor(double norm, double max_norm) { return kernels::clip_factor(norm, max_norm); }

}  // namespace microddp::ddp
