// numerics.cpp — gradient sum of squares, clip factor, NaN policy names, fault-hook parsing.
#include "ddp/numerics.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
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

double clip_factor(double norm, double max_norm) { return std::min(1.0, max_norm / (norm + kClipEps)); }

namespace {
// "rank:step[:extra]" -> fields; throws UsageError naming the variable when malformed.
void parse_fault(const char* var, int& rank, std::int64_t& step, std::string& extra) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == '\0') return;
  const std::string s(v);
  const auto c1 = s.find(':');
  MDDP_USAGE_CHECK(c1 != std::string::npos, var << "='" << s << "' must be RANK:STEP[:WHAT]");
  const auto c2 = s.find(':', c1 + 1);
  try {
    std::size_t used = 0;
    rank = std::stoi(s.substr(0, c1), &used);
    MDDP_USAGE_CHECK(used == c1 && rank >= 0, var << "='" << s << "': bad rank");
    const std::string st = s.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
    step = std::stoll(st, &used);
    MDDP_USAGE_CHECK(used == st.size() && step >= 1, var << "='" << s << "': bad step (1-based)");
  } catch (const std::logic_error&) {
    MDDP_USAGE_CHECK(false, var << "='" << s << "' must be RANK:STEP[:WHAT] with integers");
  }
  if (c2 != std::string::npos) extra = s.substr(c2 + 1);
}
}  // namespace

FaultInjection faults_from_env() {
  FaultInjection f;
  std::string what;
  parse_fault("MICRODDP_FAULT_NAN", f.nan_rank, f.nan_step, what);
  MDDP_USAGE_CHECK(what.empty() || what == "input" || what == "grad", "MICRODDP_FAULT_NAN: WHAT must be input or grad");
  f.nan_in_grad = what == "grad";
  what.clear();
  parse_fault("MICRODDP_FAULT_PERTURB", f.perturb_rank, f.perturb_step, what);
  if (!what.empty()) f.perturb_param = what;
  return f;
}

}  // namespace microddp::ddp
