// lab_commands.hpp — the course's labs (docs/labs) in the app's own tables. The program adds them at
// start-up (app/main.cpp), so the app library (microddp_app) does not depend on the labs: these
// files are a library of their own (microddp_lab_commands) that only the program links.
//   manual --average lab   lab 01's combine_replica_gradients, a row of the replica combiners
//                          (manual_replicas.hpp)
//   microddp lab-model     lab 08's alpha-beta functions next to src/perf's (lab_model_command.cpp)
//   microddp lab-bench     lab 12's all-reduce benchmark on a real backend, fitted (lab_bench_command.cpp)
// The lab rows of the strategy and backend tables come from src/labs (labs/register_labs.hpp).
#pragma once

#include "app/cli.hpp"

namespace microddp::app {

// Adds lab 01's row to the replica combiners; before the command line is built (its help lists them).
void register_lab_combiner();
// Adds `microddp lab-model` (lab_model_command.cpp) to a built command line, after every other command.
void register_lab_commands(CommandLine& cl);
// Adds `microddp lab-bench` (lab_bench_command.cpp), likewise.
void register_lab_bench_command(CommandLine& cl);

}  // namespace microddp::app
