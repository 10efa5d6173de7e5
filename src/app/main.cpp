// main.cpp — the `microddp` command: parse, validate, bring MPI up, run one subcommand.
//
// Error policy (STYLE.md): library code throws; here every error becomes one clear message and a
// non-zero exit, never a hang. Bad options are found before MPI starts and end every rank with
// exit code 2. Errors after MPI is up: a UsageError that all ranks raise identically shuts MPI
// down cleanly with exit code 2; anything else aborts the whole job (MPI_Abort) so no rank is
// left waiting in a collective.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "app/command.hpp"
#include "comm/mpi_runtime.hpp"
#include "core/error.hpp"

namespace {

// Before MPI_Init the rank is unknown; launchers export it, which lets only rank 0 print help
// and option errors instead of every rank repeating them.
bool probably_rank0() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::string(v) == "0";
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace microddp;
  CLI::App app{"microddp — data-parallel deep-learning training from first principles (C++20, MPI)"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for all subcommands");

  std::vector<std::pair<CLI::App*, std::unique_ptr<app::Command>>> commands;
  auto add = [&](auto reg, CLI::App& parent) {
    CLI::App* sub = nullptr;
    auto cmd = reg(parent, sub);
    commands.emplace_back(sub, std::move(cmd));
  };
  add(app::register_train, app);
  add(app::register_baseline, app);
  add(app::register_manual, app);
  add(app::register_make_dataset, app);
  add(app::register_inspect, app);
  add(app::register_hooks, app);
  add(app::register_analyze, app);
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks (print tables; targets live here, not in tests)");
  bench->require_subcommand(1);
  add(app::register_bench_compute, *bench);
  add(app::register_bench_collectives, *bench);
  add(app::register_bench_ddp, *bench);

  const bool print = probably_rank0();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help
      if (print) app.exit(e);
      return 0;
    }
    if (print) {
      std::fprintf(stderr, "microddp: error: %s\n", e.what());
      std::fprintf(stderr, "Run with --help for usage.\n");
    }
    return 2;
  }

  app::Command* chosen = nullptr;
  for (auto& [sub, cmd] : commands) {
    if (sub->parsed()) chosen = cmd.get();
  }
  if (chosen == nullptr) {
    if (print) std::fprintf(stderr, "microddp: error: no command given (run with --help)\n");
    return 2;
  }
  try {
    chosen->validate();
  } catch (const core::UsageError& e) {
    if (print) std::fprintf(stderr, "microddp: error: %s\n", e.what());
    return 2;
  }

  int code = 0;
  try {
    comm::MpiRuntime mpi(&argc, &argv);
    try {
      code = chosen->run(mpi);
    } catch (const core::UsageError& e) {
      if (e.agreed()) {
        if (mpi.rank() == 0) std::fprintf(stderr, "microddp: error: %s\n", e.what());
        return 2;  // every rank raised it: MpiRuntime's destructor finalises cleanly
      }
      std::fprintf(stderr, "microddp: error (rank %d): %s\n", mpi.rank(), e.what());
      std::fflush(stderr);
      comm::MpiRuntime::abort_all(2);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "microddp: fatal error (rank %d): %s\n", mpi.rank(), e.what());
      std::fflush(stderr);
      comm::MpiRuntime::abort_all(1);
    }
  } catch (const std::exception& e) {  // MPI start-up itself failed
    std::fprintf(stderr, "microddp: fatal error: %s\n", e.what());
    return 1;
  }
  return code;
}
