// cli.cpp — the command line of `microddp` (see cli.hpp).
#include "app/cli.hpp"

#include <memory>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/error.hpp"

namespace microddp::app {

namespace {

// CLI11's --help-all expands the subcommands of the top level but lists theirs (bench compute,
// collectives, ddp, links) by name only; this formatter expands every level, so --help-all shows every
// option of every command.
class ExpandEveryLevel final : public CLI::Formatter {
 public:
  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode mode) const override {
    // Sub is the mode make_expanded (one subcommand's page inside --help-all) asks with.
    return CLI::Formatter::make_subcommands(app, mode == CLI::AppFormatMode::Sub ? CLI::AppFormatMode::All : mode);
  }
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
      return "unknown option '" + name + "' before the command (" + path + "commands: " + command_names(subs) + ")";
    }
    CLI::App* next = nullptr;
    for (CLI::App* sub : subs) {
      if (sub->check_name(std::string(word))) next = sub;
    }
    if (next == nullptr) {
      return "unknown command '" + path + std::string(word) + "' (" + path + "commands: " + command_names(subs) + ")";
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
  return cl;
}

ParseOutcome parse_command_line(CommandLine& cl, int argc, const char* const* argv) {
  ParseOutcome out;
  if (auto unknown = command_word_error(cl.app, argc, argv)) {
    out.exit_code = 2;
    out.error = *unknown;
    out.suggest_help = true;
    return out;
  }
  try {
    cl.app.parse(argc, argv);
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
