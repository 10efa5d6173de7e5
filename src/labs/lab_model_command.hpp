// lab_model_command.hpp — the course's lab commands, added to the `microddp` command line by the
// program (app/main.cpp) so the app library does not depend on the labs: `microddp lab-model`
// (lab 08: the student's alpha-beta fit and break-even next to src/perf's, lab_model_command.cpp).
#pragma once

#include "app/cli.hpp"

namespace microddp::labs {

void register_lab_commands(app::CommandLine& cl);

}  // namespace microddp::labs
