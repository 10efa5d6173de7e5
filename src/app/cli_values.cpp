// cli_values.cpp — finite ranges and strategies on the command line (see cli_values.hpp).
#include "app/cli_values.hpp"

#include <cmath>
#include <sstream>

#include "core/error.hpp"

namespace microddp::app {

// ---- finite reals ----
namespace {

std::string format_real(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        double v = 0.0;
        if (!CLI::detail::lexical_cast(input, v) || !std::isfinite(v) || v < lo || v > hi) {
          return "value " + input + " is not a finite number in [" + format_real(lo) + ", " + format_real(hi) + "]";
        }
        return {};
      },
      "FLOAT in [" + format_real(lo) + " - " + format_real(hi) + "]");
}

// ---- strategies ----
namespace {

// Rewrites a strategy name to the enum's number, which CLI11 then converts into the enum.
CLI::Validator strategy_name(const std::string& option) {
  return CLI::Validator(
      [option](std::string& input) -> std::string {
        try {
          input = std::to_string(static_cast<int>(ddp::parse_strategy(input, option)));
        } catch (const core::UsageError& e) {
          return e.what();
        }
        return {};
      },
      "");
}

// "naive: one blocking ...; flat: ...": what each choice does, for the help.
std::string strategies_help() {
  std::string help;
  for (const ddp::Strategy s : ddp::kStrategies) {
    help += (help.empty() ? "" : "; ") + std::string(ddp::strategy_name(s)) + ": " + std::string(ddp::strategy_description(s));
  }
  return help;
}

}  // namespace

CLI::Option* add_strategy_option(CLI::App* sub, const std::string& name, ddp::Strategy& target,
                                 const std::string& description) {
  return sub->add_option(name, target, description + " (" + strategies_help() + ")")
      ->transform(strategy_name(name))
      ->type_name("STRATEGY")
      ->default_str(std::string(ddp::strategy_name(target)));
}

CLI::Option* add_strategy_list_option(CLI::App* sub, const std::string& name, std::vector<ddp::Strategy>& target,
                                      const std::string& description) {
  std::string defaults;
  for (const ddp::Strategy s : target) defaults += (defaults.empty() ? "" : ",") + std::string(ddp::strategy_name(s));
  return sub->add_option(name, target, description + ", comma-separated (" + strategies_help() + ")")
      ->delimiter(',')
      ->transform(strategy_name(name))
      ->type_name("STRATEGY,...")
      ->default_str(defaults);
}

}  // namespace microddp::app
