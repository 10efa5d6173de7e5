// cli_values.cpp — finite ranges and strategies on the command line (see cli_values.hpp).
#include "app/cli_values.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/error.hpp"
#include "core/precision.hpp"

namespace microddp::app {

// ---- finite reals ----
namespace {

std::string format_real(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

std::optional<double> parse_finite_real(std::string_view text) {
  // strtod on a copy: std::from_chars for double is missing from some standard libraries we build with.
  const std::string s(text);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        const std::optional<double> parsed = parse_finite_real(input);
        const double v = parsed.value_or(0.0);
        if (!parsed || v < lo || v > hi) {
          return "value " + input + " is not a finite number in [" + format_real(lo) + ", " + format_real(hi) + "]";
        }
        return {};
      },
      "FLOAT in [" + format_real(lo) + " - " + format_real(hi) + "]");
}

// ---- byte sizes ----
namespace {

constexpr std::int64_t kMaxByteSize = std::int64_t{1} << 62;

// The multiplier a suffix stands for (binary), or 0 when it is not one.
std::int64_t suffix_multiplier(std::string_view suffix) {
  if (suffix.empty()) return 1;
  const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix.front())));
  const std::string_view rest = suffix.substr(1);
  if (!(rest.empty() || rest == "B" || rest == "b" || rest == "iB" || rest == "ib")) return 0;
  switch (unit) {
    case 'B':
      return rest.empty() ? 1 : 0;  // "B" alone: bytes
    case 'K':
      return std::int64_t{1} << 10;
    case 'M':
      return std::int64_t{1} << 20;
    case 'G':
      return std::int64_t{1} << 30;
    default:
      return 0;
  }
}

}  // namespace

std::optional<std::int64_t> parse_byte_size(std::string_view text) {
  std::int64_t n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr == text.data() || n < 0) return std::nullopt;  // also refuses a sign-only or empty text
  const std::int64_t mult = suffix_multiplier(text.substr(static_cast<std::size_t>(ptr - text.data())));
  if (mult == 0 || n > kMaxByteSize / mult) return std::nullopt;
  return n * mult;
}

std::string format_byte_size(std::int64_t bytes) {
  for (const auto& [shift, suffix] : {std::pair{30, "G"}, std::pair{20, "M"}, std::pair{10, "K"}}) {
    const std::int64_t unit = std::int64_t{1} << shift;
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  }
  return std::to_string(bytes);
}

CLI::Option* add_byte_size_option(CLI::App* sub, const std::string& name, std::int64_t& target,
                                  const std::string& description, std::int64_t lo, std::int64_t hi) {
  const std::string range = "[" + format_byte_size(lo) + ", " + format_byte_size(hi) + "]";
  // Rewrites "1M" to "1048576", which CLI11 then converts into the integer.
  CLI::Validator bytes(
      [name, lo, hi, range](std::string& input) -> std::string {
        const std::optional<std::int64_t> v = parse_byte_size(input);
        if (!v)
          return "value " + input +
                 " is not a size in bytes (a whole number, optionally with K, M or G = 2^10, 2^20, 2^30)";
        if (*v < lo || *v > hi) return "value " + input + " is outside " + range + " bytes";
        input = std::to_string(*v);
        return {};
      },
      "");
  return sub->add_option(name, target, description + " (bytes; suffix K, M, G = 2^10, 2^20, 2^30; range " + range + ")")
      ->transform(bytes)
      ->type_name("SIZE")
      ->default_str(format_byte_size(target));
}

// ---- strategies ----
namespace {

// Checks that the value is a strategy's name (the error names the option and the choices).
CLI::Validator strategy_name(const std::string& option) {
  return CLI::Validator(
      [option](std::string& input) -> std::string {
        try {
          ddp::parse_strategy(input, option);
        } catch (const core::UsageError& e) {
          return e.what();
        }
        return {};
      },
      "");
}

// "naive | flat | ...; see Strategies below": the choices for an option's help; what each does is
// said once, in the footer (strategy_descriptions), not under every option that takes one.
std::string strategies_help() {
  std::string help;
  for (const ddp::Strategy s : ddp::all_strategies())
    help += (help.empty() ? "" : " | ") + std::string(ddp::strategy_name(s));
  return help + "; see Strategies below";
}

}  // namespace

std::string strategy_descriptions() {
  std::string help = "Strategies (--strategy, --strategies, --scaling-strategy):";
  auto row = [&help](ddp::Strategy s) {
    std::string name(ddp::strategy_name(s));
    name.resize(std::max<std::size_t>(name.size(), 14), ' ');
    help += "\n  " + name + std::string(ddp::strategy_description(s));
  };
  for (const ddp::Strategy s : ddp::all_strategies()) row(s);  // the labs' rows too, once registered
  return help;
}

CLI::Option* add_strategy_option(CLI::App* sub, const std::string& name, ddp::Strategy& target,
                                 const std::string& description) {
  sub->footer(strategy_descriptions());
  return sub
      ->add_option_function<std::string>(
          name, [&target, name](const std::string& s) { target = ddp::parse_strategy(s, name); },
          description + " (" + strategies_help() + ")")
      ->check(strategy_name(name))
      ->type_name("STRATEGY")
      ->default_str(std::string(ddp::strategy_name(target)));
}

CLI::Option* add_strategy_list_option(CLI::App* sub, const std::string& name, std::vector<ddp::Strategy>& target,
                                      const std::string& description) {
  std::string defaults;
  for (const ddp::Strategy s : target) defaults += (defaults.empty() ? "" : ",") + std::string(ddp::strategy_name(s));
  sub->footer(strategy_descriptions());
  return sub
      ->add_option_function<std::vector<std::string>>(
          name,
          [&target, name](const std::vector<std::string>& names) {
            target.clear();
            for (const auto& s : names) target.push_back(ddp::parse_strategy(s, name));
          },
          description + ", comma-separated (" + strategies_help() + ")")
      ->delimiter(',')
      ->check(strategy_name(name))
      ->type_name("STRATEGY,...")
      ->default_str(defaults);
}

// ---- gradient compression modes ----
namespace {

std::vector<std::string> compression_mode_names() {
  std::vector<std::string> names;
  for (const auto& row : ddp::compression_modes()) names.emplace_back(row.name);
  return names;
}

}  // namespace

CLI::Option* add_compression_option(CLI::App* sub, const std::string& name, ddp::CompressionMode& target,
                                    const std::string& description) {
  std::string help;  // "none (fp32), fp16, bf16 (16-bit, fp32 accumulation), powersgd (low rank)"
  for (const auto& row : ddp::compression_modes()) {
    help += (help.empty() ? "" : ", ") + std::string(row.name) +
            (row.help.empty() ? "" : " (" + std::string(row.help) + ")");
  }
  return sub
      ->add_option_function<std::string>(
          name, [&target](const std::string& s) { target = ddp::parse_compression_mode(s); }, description + ": " + help)
      ->check(CLI::IsMember(compression_mode_names()))
      ->type_name("TEXT")
      ->default_str(std::string(ddp::compression_mode_name(target)));
}

CLI::Option* add_compression_list_option(CLI::App* sub, const std::string& name,
                                         std::vector<ddp::CompressionMode>& target, const std::string& description) {
  std::string modes, defaults;
  for (const auto& m : compression_mode_names()) modes += (modes.empty() ? "" : ",") + m;
  for (const auto m : target) defaults += (defaults.empty() ? "" : ",") + std::string(ddp::compression_mode_name(m));
  return sub
      ->add_option_function<std::vector<std::string>>(
          name,
          [&target](const std::vector<std::string>& names) {
            target.clear();
            for (const auto& s : names) target.push_back(ddp::parse_compression_mode(s));
          },
          description + " (" + modes + ")")
      ->delimiter(',')
      ->check(CLI::IsMember(compression_mode_names()))
      ->type_name("TEXT")
      ->default_str("[" + defaults + "]");
}

core::Precision precision_from_options(const std::string& name, const CLI::Option* given, bool tf32_flag) {
  MDDP_USAGE_CHECK(!tf32_flag || given == nullptr || given->count() == 0 || name == "tf32",
                   "--tf32 means --precision tf32; it contradicts --precision " << name);
  return tf32_flag ? core::Precision::Tf32 : core::parse_precision(name);
}

void add_compute_options(CLI::App* sub, ComputeOptions& o, const std::string& what) {
  sub->add_option("--device", o.device,
                  "Where " + what +
                      " computes, as train --device: cpu (the default here), cuda (this rank's GPU; --comm defaults "
                      "to nccl) or auto")
      ->capture_default_str();
  o.precision_option =
      sub->add_option("--precision", o.precision, "GEMM arithmetic, as train --precision: fp32, tf32 (GPU), bf16")
          ->check(CLI::IsMember(core::kPrecisionNames.names()))
          ->capture_default_str();
  sub->add_flag("--tf32", o.tf32, "Same as --precision tf32");
}

}  // namespace microddp::app
