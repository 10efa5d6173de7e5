// cli.cpp — the command line of `microddp` (see cli.hpp).
#include "app/cli.hpp"

#include <sstream>

#include "core/error.hpp"

namespace microddp::app {

std::unique_ptr<CommandLine> build_command_line() {
  auto cl = std::make_unique<CommandLine>();
  CLI::App& app = cl->app;
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for all subcommands");
  auto add = [&](auto reg, CLI::App& parent) {
    CLI::App* sub = nullptr;
    auto cmd = reg(parent, sub);
    cl->commands.emplace_back(sub, std::move(cmd));
  };
  add(register_train, app);
  add(register_baseline, app);
  add(register_manual, app);
  add(register_make_dataset, app);
  add(register_inspect, app);
  add(register_hooks, app);
  add(register_analyze, app);
  add(register_devices, app);
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks (print tables; targets live here, not in tests)");
  bench->require_subcommand(1);
  add(register_bench_compute, *bench);
  add(register_bench_collectives, *bench);
  add(register_bench_ddp, *bench);
  return cl;
}

ParseOutcome parse_command_line(CommandLine& cl, int argc, const char* const* argv) {
  ParseOutcome out;
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
