// fault_env.cpp — MICRODDP_FAULT_* -> core::FaultPlan.
#include "app/fault_env.hpp"

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "app/training_data.hpp"
#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "ddp/step_faults.hpp"
#include "io/checkpoint_save.hpp"

namespace microddp::app {

namespace {

// A whole decimal integer within [lo, hi]; throws UsageError naming `var` otherwise.
std::int64_t parse_int(const char* var, const std::string& value, const std::string& text, std::int64_t lo,
                       std::int64_t hi, const char* what) {
  std::int64_t v = 0;
  std::size_t used = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  MDDP_USAGE_CHECK(
      !text.empty() && used == text.size() && v >= lo && v <= hi,
      var << "='" << value << "': bad " << what << " '" << text << "' (an integer in [" << lo << ", " << hi << "])");
  return v;
}

struct RankStep {
  int rank = -1;  // -1: the variable is unset
  std::int64_t step = 0;
  std::string what;  // the optional third part
};

// "RANK:STEP[:WHAT]"; step is 1-based. `step_name` names it in errors (a sequence number for the
// communicator's points).
RankStep parse_rank_step(const EnvLookup& env, const char* var, const char* step_name = "step (1-based)") {
  RankStep r;
  const char* v = env(var);
  if (v == nullptr || *v == '\0') return r;
  const std::string s(v);
  const auto c1 = s.find(':');
  MDDP_USAGE_CHECK(c1 != std::string::npos, var << "='" << s << "' must be RANK:STEP[:WHAT]");
  const auto c2 = s.find(':', c1 + 1);
  constexpr std::int64_t kMaxRank = 1 << 24;  // far above any job; keeps the value an int
  r.rank = static_cast<int>(parse_int(var, s, s.substr(0, c1), 0, kMaxRank, "rank"));
  const std::string step = s.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
  r.step = parse_int(var, s, step, 1, std::int64_t{1} << 40, step_name);
  if (c2 != std::string::npos) r.what = s.substr(c2 + 1);
  return r;
}

}  // namespace

core::FaultPlan fault_plan_from_env(const EnvLookup& env) {
  namespace point = ddp::trainer_fault_point;
  core::FaultPlan plan;

  const RankStep nan = parse_rank_step(env, "MICRODDP_FAULT_NAN");
  if (nan.rank >= 0) {
    MDDP_USAGE_CHECK(nan.what.empty() || nan.what == "input" || nan.what == "grad",
                     "MICRODDP_FAULT_NAN: WHAT must be input or grad, got '" << nan.what << "'");
    plan.arm({std::string(nan.what == "grad" ? point::kNanGradient : point::kNanInput), nan.rank, nan.step, ""});
  }

  const RankStep perturb = parse_rank_step(env, "MICRODDP_FAULT_PERTURB");
  if (perturb.rank >= 0) {
    plan.arm({std::string(point::kPerturbParameter), perturb.rank, perturb.step,
              perturb.what.empty() ? std::string("layer_01.weight") : perturb.what});
  }

  const char* kill_at = env("MICRODDP_FAULT_KILL_AT");
  if (kill_at != nullptr && *kill_at != '\0') {
    const std::string at(kill_at);
    std::string known;
    bool found = false;
    for (const auto& p : io::save_fault_points()) {
      found = found || p == at;
      known += (known.empty() ? "" : " ") + p;
    }
    MDDP_USAGE_CHECK(found, "MICRODDP_FAULT_KILL_AT='" << at << "' is not a save point (" << known << ")");
    auto optional_int = [&](const char* var, std::int64_t fallback, std::int64_t lo, const char* what) {
      const char* v = env(var);
      if (v == nullptr || *v == '\0') return fallback;
      return parse_int(var, v, v, lo, std::int64_t{1} << 24, what);
    };
    const auto rank = static_cast<int>(optional_int("MICRODDP_FAULT_KILL_RANK", 0, 0, "rank"));
    const std::int64_t save = optional_int("MICRODDP_FAULT_KILL_SAVE", 1, 1, "save number (1-based)");
    plan.arm({at, rank, save, ""});
  }

  const RankStep truncate = parse_rank_step(env, "MICRODDP_FAULT_TRUNCATE_DATA");
  if (truncate.rank >= 0) {
    MDDP_USAGE_CHECK(truncate.what.empty(), "MICRODDP_FAULT_TRUNCATE_DATA='" << env("MICRODDP_FAULT_TRUNCATE_DATA")
                                                                            << "' must be RANK:STEP");
    plan.arm({std::string(kTruncateDataPoint), truncate.rank, truncate.step, ""});
  }

  // The communicator's points: occurrence = the collective's sequence number on that rank.
  const RankStep exit = parse_rank_step(env, "MICRODDP_FAULT_EXIT", "collective sequence number (1-based)");
  if (exit.rank >= 0) {
    const std::int64_t code = exit.what.empty() ? comm::comm_fault_point::kDefaultExitCode
                                                : parse_int("MICRODDP_FAULT_EXIT", env("MICRODDP_FAULT_EXIT"),
                                                            exit.what, 0, 255, "exit code");
    plan.arm({std::string(comm::comm_fault_point::kExit), exit.rank, exit.step, std::to_string(code)});
  }
  const RankStep extra =
      parse_rank_step(env, "MICRODDP_FAULT_EXTRA_COLLECTIVE", "collective sequence number (1-based)");
  if (extra.rank >= 0) {
    MDDP_USAGE_CHECK(extra.what.empty(), "MICRODDP_FAULT_EXTRA_COLLECTIVE='" << env("MICRODDP_FAULT_EXTRA_COLLECTIVE")
                                                                             << "' must be RANK:SEQ");
    plan.arm({std::string(comm::comm_fault_point::kExtraCollective), extra.rank, extra.step, ""});
  }
  return plan;
}

core::FaultPlan fault_plan_from_env() {
  return fault_plan_from_env([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace microddp::app
