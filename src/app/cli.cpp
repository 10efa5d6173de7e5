// cli.cpp — the command line of `microddp` (see cli.hpp).
#include "app/cli.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>

#include "app/build_info.hpp"
#include "app/cli_values.hpp"
#include "app/repeated_options.hpp"
#include "core/error.hpp"

namespace microddp::app {

namespace {

// Bounds that are large powers of two read better as such: "[1, 1099511627776]" -> "[1, 2^40]".
std::string powers_of_two(const std::string& text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      out += text[i++];
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    const std::string digits = text.substr(i, j - i);
    const unsigned long long v = digits.size() < 19 ? std::stoull(digits) : 0;
    if (v >= (1ULL << 20) && (v & (v - 1)) == 0) {
      out += "2^" + std::to_string(std::countr_zero(v));
    } else {
      out += digits;
    }
    i = j;
  }
  return out;
}

// The type of an option in words, from CLI11's type name and its validators' descriptions:
// "INT:INT in [1 - 16777216]" -> "integer in [1, 16777216]", "TEXT:{on,off}" -> "one of on, off",
// "FLOAT:FLOAT in [0 - 1]" -> "number in [0, 1]", "SIZE" -> "size in bytes".
std::string type_in_words(const std::string& type_name) {
  const std::size_t colon = type_name.find(':');
  const std::string base = type_name.substr(0, colon);
  std::string rest = colon == std::string::npos ? "" : type_name.substr(colon + 1);
  static const std::pair<const char*, const char*> kWords[] = {
      {"INT", "integer"}, {"UINT", "integer >= 0"},  {"FLOAT", "number"},      {"TEXT", "text"},
      {"WHO", "text"},    {"SIZE", "size in bytes"}, {"STRATEGY", "strategy"}, {"STRATEGY,...", "strategies"},
  };
  std::string words = base;
  for (const auto& [name, word] : kWords) {
    if (base == name) words = word;
  }
  if (rest.empty()) return words;
  if (rest.front() == '{' && rest.back() == '}') {  // CLI::IsMember: the choices
    std::string choices = rest.substr(1, rest.size() - 2);
    for (std::size_t i = 0; (i = choices.find(',', i)) != std::string::npos; i += 2) choices.replace(i, 1, ", ");
    return "one of " + choices;
  }
  // CLI::Range and finite_range: "INT in [lo - hi]" -> "in [lo, hi]".
  const std::size_t in = rest.find(" in [");
  if (in != std::string::npos) rest = rest.substr(in + 1);
  const std::size_t dash = rest.find(" - ");
  if (rest.starts_with("in [") && dash != std::string::npos) rest.replace(dash, 3, ", ");
  return words + " " + powers_of_two(rest);
}

// CLI11's --help-all expands the subcommands of the top level but lists theirs (bench compute,
// collectives, ddp, links) by name only; this formatter expands every level, so --help-all shows every
// option of every command. Types are shown in words ("--width <integer in [1, 16777216]> (default
// 128)" rather than "--width INT:INT in [1 - 16777216]=128").
class ExpandEveryLevel final : public CLI::Formatter {
 public:
  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode mode) const override {
    // Sub is the mode make_expanded (one subcommand's page inside --help-all) asks with.
    return CLI::Formatter::make_subcommands(app, mode == CLI::AppFormatMode::Sub ? CLI::AppFormatMode::All : mode);
  }
  // The top level's footer (what every strategy does) closes --help-all only; `microddp --help` lists
  // the commands.
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    if (app->get_parent() == nullptr) all_ = mode == CLI::AppFormatMode::All;  // the pages inside ask with Sub
    return CLI::Formatter::make_help(app, std::move(name), mode);
  }
  std::string make_footer(const CLI::App* app) const override {
    if (app->get_parent() == nullptr && !all_) return {};
    return CLI::Formatter::make_footer(app);
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (!opt->get_option_text().empty() || opt->get_type_size() == 0) return CLI::Formatter::make_option_opts(opt);
    const std::string type = opt->get_type_name();  // empty for a flag
    std::string out = type.empty() ? "" : " <" + type_in_words(type) + ">";
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
    if (opt->get_required()) out += " (required)";
    if (!opt->get_default_str().empty()) out += " (default " + opt->get_default_str() + ")";
    if (!opt->get_envname().empty()) out += " (or $" + opt->get_envname() + ")";
    for (const CLI::Option* other : opt->get_excludes()) out += " (not with " + other->get_name() + ")";
    return out;
  }

 private:
  mutable bool all_ = false;  // the page being made is --help-all's
};

std::vector<CLI::App*> subcommands_of(CLI::App& app) {
  return app.get_subcommands([](CLI::App*) { return true; });
}

// "train, baseline, ...": the choices at one level, in registration order.
std::string command_names(const std::vector<CLI::App*>& subs) {
  std::string names;
  for (const CLI::App* sub : subs) names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// Edit distance with transpositions (optimal string alignment): "--widht" is 1 from "--width".
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> nearest_name(std::string_view word, const std::vector<std::string>& names) {
  // A typo: at most 2 edits, and fewer than half the word's letters (so "-x" suggests nothing).
  std::optional<std::string> best;
  std::size_t best_d = 0;
  for (const std::string& n : names) {
    const std::size_t d = edit_distance(word, n);
    if (d <= 2 && 2 * d < word.size() && (!best || d < best_d)) {
      best = n;
      best_d = d;
    }
  }
  if (best) return best;
  // An abbreviation: the start of exactly one name ("--check" -> "--check-every").
  std::optional<std::string> prefix_of;
  for (const std::string& n : names) {
    if (word.size() >= 4 && n.size() > word.size() && n.starts_with(word)) {
      if (prefix_of) return std::nullopt;
      prefix_of = n;
    }
  }
  return prefix_of;
}

namespace {

// "--width", "-b", ...: every spelling of the options of one command, in registration order.
std::vector<std::string> option_spellings(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// " (did you mean --width?)" or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& names) {
  const std::optional<std::string> near = nearest_name(word, names);
  return near ? " (did you mean " + *near + "?)" : "";
}

// The command argv names ("bench collectives"), walked down the tree as far as the words go.
CLI::App* named_command(CLI::App& root, int argc, const char* const* argv, std::string& path) {
  CLI::App* at = &root;
  for (int i = 1; i < argc && argv[i] != nullptr; ++i) {
    CLI::App* next = nullptr;
    for (CLI::App* sub : subcommands_of(*at)) {
      if (sub->check_name(argv[i])) next = sub;
    }
    if (next == nullptr) break;
    path += (path.empty() ? "" : " ") + next->get_name();
    at = next;
  }
  return at;
}

// The words CLI11 could not place (an unknown option, a value too many), in the order given, with
// the nearest real option where one is near.
std::string extras_error(CLI::App& root, int argc, const char* const* argv) {
  std::string path;
  const CLI::App* cmd = named_command(root, argc, argv, path);
  const std::vector<std::string> names = option_spellings(*cmd);
  std::vector<std::string> unknown, strays, hints;
  for (const std::string& w : root.remaining(true)) {
    const bool number = parse_finite_real(w).has_value();
    if (w.size() > 1 && w.front() == '-' && !number) {
      const std::string name = w.substr(0, w.find('='));
      unknown.push_back("'" + name + "'");
      if (const auto near = nearest_name(name, names)) hints.push_back(*near);
    } else {
      strays.push_back("'" + w + "'");
    }
  }
  const std::string for_cmd = path.empty() ? "" : " for '" + path + "'";
  auto join = [](const std::vector<std::string>& v, const char* sep) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
  };
  if (!unknown.empty()) {
    return std::string(unknown.size() == 1 ? "unknown option " : "unknown options ") + join(unknown, ", ") + for_cmd +
           (hints.empty() ? "" : " (did you mean " + join(hints, " or ") + "?)");
  }
  const bool positionals = !cmd->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
  return std::string(strays.size() == 1 ? "unexpected argument " : "unexpected arguments ") + join(strays, ", ") +
         for_cmd + (positionals ? "" : " (a value follows its option: --name VALUE or --name=VALUE)");
}

// In front of the validators of every integer and real option: a value of the wrong kind is named
// as such ("--width: value 'abc' is not an integer"), where CLI11's range check would call it out
// of range and its conversion only says "Could not convert".
void check_number_kinds(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    const std::string base = type.substr(0, type.find(':'));
    if (base != "INT" && base != "UINT" && base != "FLOAT") continue;
    opt->transform(CLI::Validator(
        [base](std::string& value) -> std::string {
          const char* s = value.c_str();
          char* end = nullptr;
          const bool blank = value.empty() || std::isspace(static_cast<unsigned char>(value.front()));
          if (base == "FLOAT") {
            (void)std::strtod(s, &end);
            if (blank || end != s + value.size()) return "value '" + value + "' is not a number";
            return {};
          }
          errno = 0;
          (void)std::strtoll(s, &end, 0);  // as CLI11 converts: decimal, 0x hex, 0 octal
          if (blank || end != s + value.size()) return "value '" + value + "' is not an integer";
          if (errno == ERANGE) return "value '" + value + "' is too large";
          if (base == "UINT" && value.front() == '-') return "value '" + value + "' is not an integer >= 0";
          return {};
        },
        ""));
  }
  for (CLI::App* sub : subcommands_of(app)) check_number_kinds(*sub);
}

// In front of every validator of every option that takes a value (positionals included): an empty
// value is refused, never read as "not given". A script passing `--data "$UNSET"` would otherwise
// train on the synthetic set and report success. Installed once over the whole tree at parse time, so
// every option of every command, the labs' and those added later, has it without asking for it.
constexpr const char* kEmptyValue = "an empty value (give a value, or leave the option out for its default)";

void refuse_empty_values(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_expected_max() == 0) continue;  // a flag: no value (`--flag=` is empty_joined_value's)
    opt->transform(CLI::Validator(
        [](std::string& value) -> std::string {
          return value.empty() ? kEmptyValue : std::string();
        },
        ""));
  }
  for (CLI::App* sub : subcommands_of(app)) refuse_empty_values(*sub);
}

// `--name=` with nothing after the '=', for an option of the command argv names (flags included):
// CLI11 would read it as the option without a value and take the next word as its value, or say
// "1 required ... missing".
std::optional<std::string> empty_joined_value(CLI::App& root, int argc, const char* const* argv) {
  std::string path;
  const CLI::App* cmd = named_command(root, argc, argv, path);
  for (int i = 1; i < argc && argv[i] != nullptr; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") break;  // what follows is no option
    if (!word.starts_with("--") || !word.ends_with("=") || word.find('=') != word.size() - 1) continue;
    const std::string name(word.substr(0, word.size() - 1));
    if (cmd->get_option_no_throw(name) != nullptr) return name + ": " + kEmptyValue;
  }
  return std::nullopt;
}

// The command words of argv walked down the command tree: a missing command, a word that is not a
// command, or an unknown option where a command is expected is named with the real choices (CLI11
// would only say "A subcommand is required" or that the argument was not expected). --help and
// --help-all, and everything after a command without subcommands, are left to CLI11.
std::optional<std::string> command_word_error(CLI::App& root, int argc, const char* const* argv) {
  CLI::App* at = &root;
  std::string path;  // the command words so far, e.g. "bench "
  for (int i = 1; i < argc && argv[i] != nullptr; ++i) {
    const std::vector<CLI::App*> subs = subcommands_of(*at);
    const std::string_view word = argv[i];
    if (subs.empty()) return std::nullopt;
    if (word.starts_with("-")) {
      // --help, --help-all: CLI11's. Anything else before the command is no option of microddp
      // (CLI11 would only say that a subcommand is required).
      const std::string name(word.substr(0, word.find('=')));
      if (at->get_option_no_throw(name) != nullptr) return std::nullopt;
      return "unknown option '" + name + "' before the command (" + path + "commands: " + command_names(subs) + ")" +
             did_you_mean(name, option_spellings(*at));
    }
    CLI::App* next = nullptr;
    for (CLI::App* sub : subs) {
      if (sub->check_name(std::string(word))) next = sub;
    }
    if (next == nullptr) {
      std::vector<std::string> names;
      for (const CLI::App* sub : subs) names.push_back(sub->get_name());
      return "unknown command '" + path + std::string(word) + "' (" + path + "commands: " + command_names(subs) + ")" +
             did_you_mean(word, names);
    }
    path += std::string(word) + " ";
    at = next;
  }
  const std::vector<CLI::App*> subs = subcommands_of(*at);
  if (!subs.empty()) return "no command given (" + path + "commands: " + command_names(subs) + ")";
  return std::nullopt;
}

}  // namespace

std::unique_ptr<CommandLine> build_command_line() {
  auto cl = std::make_unique<CommandLine>();
  CLI::App& app = cl->app;
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for all subcommands");
  app.formatter(std::make_shared<ExpandEveryLevel>());  // before the subcommands: they copy it
  auto add = [&](auto reg, CLI::App& parent) {
    CLI::App* sub = nullptr;
    auto cmd = reg(parent, sub);
    cl->commands.emplace_back(sub, std::move(cmd));
  };
  add(register_train, app);
  add(register_baseline, app);
  add(register_manual, app);
  add(register_make_dataset, app);
  add(register_evaluate, app);
  add(register_export, app);
  add(register_inspect, app);
  add(register_hooks, app);
  add(register_analyze, app);
  add(register_devices, app);
  add(register_ring_schedule, app);
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks (print tables; targets live here, not in tests)");
  bench->require_subcommand(1);
  add(register_bench_compute, *bench);
  add(register_bench_collectives, *bench);
  add(register_bench_ddp, *bench);
  add(register_bench_links, *bench);
  app.footer(strategy_descriptions());  // said once in --help-all (the commands' own footers are not shown there)
  app.set_version_flag("--version", version_text(), "Print the version, the git commit and what this build has");
  return cl;
}

ParseOutcome parse_command_line(CommandLine& cl, int argc, const char* const* argv) {
  ParseOutcome out;
  if (!cl.number_kinds_checked) {  // here, not at build time: commands registered later (main's) count too
    check_number_kinds(cl.app);
    refuse_empty_values(cl.app);  // after check_number_kinds: runs first, so "" is called empty, not "not a number"
    last_value_wins(cl.app);      // app/repeated_options.hpp
    cl.number_kinds_checked = true;
  }
  if (auto unknown = command_word_error(cl.app, argc, argv)) {
    out.exit_code = 2;
    out.error = *unknown;
    out.suggest_help = true;
    return out;
  }
  if (auto empty = empty_joined_value(cl.app, argc, argv)) {
    out.exit_code = 2;
    out.error = *empty;
    out.suggest_help = true;
    return out;
  }
  try {
    cl.app.parse(argc, argv);
  } catch (const CLI::ExtrasError&) {
    out.exit_code = 2;
    out.error = extras_error(cl.app, argc, argv);
    out.suggest_help = true;
    return out;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help / --help-all: CLI11 formats the right page
      std::ostringstream text;
      cl.app.exit(e, text, text);
      out.help = true;
      out.help_text = text.str();
      return out;
    }
    out.exit_code = 2;
    out.error = e.what();
    out.suggest_help = true;
    return out;
  }
  for (auto& [sub, cmd] : cl.commands) {
    if (sub->parsed()) out.chosen = cmd.get();
  }
  if (out.chosen == nullptr) {
    out.exit_code = 2;
    out.error = "no command given (run with --help)";
    return out;
  }
  try {
    out.chosen->validate();
  } catch (const core::UsageError& e) {
    out.chosen = nullptr;
    out.exit_code = 2;
    out.error = e.what();
  }
  return out;
}

}  // namespace microddp::app
