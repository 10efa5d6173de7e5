// register_labs.hpp — how the course's labs (docs/labs) plug into the program: as rows of the
// production tables, added at start-up. No production library names a lab; app/main.cpp calls
// register_labs() once before it builds the command line (whose help lists every row), and a grader
// calls it to run the program's seams against the reference solutions.
//
//   strategy table (ddp/strategy.hpp)  lab, lab-overlap, lab-bucketed,  labs 04-06 and 09,
//                                      lab-zero1                        lab_strategies.hpp
//   backend table (comm/factory.hpp)   lab-naive, lab-ring, lab-sync     labs 02, 03, 07, lab_backend.hpp
//   compression table                  lab-powersgd                      lab 10, lab_powersgd.hpp
//   (ddp/compression/compression_config.hpp)
//                                      lab-hier                         lab 11, lab_hier.hpp
// The app's own lab rows (manual --average lab: lab 01; `microddp lab-model`: lab 08) are added by
// the app (app/lab_commands.hpp), since those tables live in the app.
#pragma once

namespace microddp::labs {

// Adds every lab row to the strategy, backend and compression tables; later calls do nothing.
void register_labs();

}  // namespace microddp::labs
