// main.cpp — the `microddp` command: parse, validate, bring MPI up, run one subcommand.
//
// Error policy (docs/design.md): library code throws; here every error becomes one clear message and a
// non-zero exit, never a hang. Bad options are found before MPI starts and end every rank with
// exit code 2. Errors after MPI is up: a UsageError that all ranks raise identically shuts MPI
// down cleanly with exit code 2; an AgreedError (every rank stopped the run at the same point,
// e.g. --on-nan abort or a divergence check) shuts MPI down cleanly with exit code 1; anything
// else aborts the whole job (MPI_Abort) so no rank is left waiting in a collective.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "app/cli.hpp"
#include "app/comm_settings.hpp"
#include "app/lab_commands.hpp"
#include "comm/runtime/mpi_runtime.hpp"
#include "core/error.hpp"
#include "labs/register_labs.hpp"

namespace {

// Before MPI_Init the rank is unknown; launchers export it, which lets only rank 0 print help
// and option errors instead of every rank repeating them.
bool probably_rank0() { return microddp::comm::MpiRuntime::launcher_rank().value_or("0") == "0"; }

}  // namespace

int main(int argc, char** argv) {
  using namespace microddp;
  // The course's labs (docs/labs) add their rows to the program's tables here, before the command
  // line is built (its help lists every row), so no library of the product depends on them:
  // --strategy lab | lab-overlap | lab-bucketed | lab-zero1 (labs 04-06, 09), --comm lab-naive | lab-ring | lab-sync
  // | lab-hier (02, 03, 07, 11), manual --average lab (01), `microddp lab-model` (08), `microddp lab-bench` (12).
  labs::register_labs();
  app::register_lab_combiner();
  auto cl = app::build_command_line();
  app::register_lab_commands(*cl);
  app::register_lab_bench_command(*cl);  // `microddp lab-bench` (lab 12)
  const bool print = probably_rank0();
  const app::ParseOutcome parsed = app::parse_command_line(*cl, argc, argv);
  if (parsed.help) {
    if (print) std::fputs(parsed.help_text.c_str(), stdout);
    return 0;
  }
  if (parsed.chosen == nullptr) {
    if (print) {
      std::fprintf(stderr, "microddp: error: %s\n", parsed.error.c_str());
      if (parsed.suggest_help) std::fprintf(stderr, "Run with --help for usage.\n");
    }
    return parsed.exit_code;
  }
  app::Command* chosen = parsed.chosen;
  try {
    // The environment's communication settings, checked like options: before MPI, on every rank.
    const app::CommSettings settings = app::comm_settings_from_environment();
    app::apply_process_settings(settings);
    chosen->set_comm_settings(settings);
  } catch (const core::UsageError& e) {
    if (print) std::fprintf(stderr, "microddp: error: %s\n", e.what());
    return 2;
  }

  int code = 0;
  try {
    comm::MpiRuntime mpi(&argc, &argv, chosen->comm_timeout_s());
    try {
      code = chosen->run(mpi);
    } catch (const core::UsageError& e) {
      if (e.agreed() || mpi.size() == 1) {  // a single rank always agrees with itself
        if (mpi.rank() == 0) std::fprintf(stderr, "microddp: error: %s\n", e.what());
        return 2;  // every rank raised it: MpiRuntime's destructor finalises cleanly
      }
      std::fprintf(stderr, "microddp: error (rank %d): %s\n", mpi.rank(), e.what());
      std::fflush(stderr);
      comm::MpiRuntime::abort_all(2);
    } catch (const core::AgreedError& e) {
      // Every rank raised it at the same point (e.g. --on-nan abort, divergence check).
      if (mpi.rank() == 0) std::fprintf(stderr, "microddp: error: %s\n", e.what());
      return 1;
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
