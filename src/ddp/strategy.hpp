// strategy.hpp — the gradient-synchronisation strategies, named once: the enum every layer passes
// around (ddp builds them, perf models them, app parses and lists them) and their one spelling.
//
// Contract: kStrategies lists every production strategy in the order help text, benchmarks and the
// analysis present them (cheapest idea first). kLabStrategies are the course's labs (docs/labs):
// a production strategy with one part written by the student (lab: lab 04's naive data
// parallelism; lab-overlap: lab 05's hooks; lab-bucketed: lab 06's bucket planner), built outside this library (grad_sync.hpp:
// set_lab_sync_maker). They are parsed and named like the others but are in no default list, and
// everything that models or plans a strategy treats them as modelled_as() says. strategy_name() and
// parse_strategy() are inverse; a name that is not a strategy is a core::UsageError naming the
// option it came from and listing the choices.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace microddp::ddp {

enum class Strategy {
  Naive,     // one blocking all-reduce per parameter after backward
  Flat,      // one blocking all-reduce of the whole flat gradient buffer after backward
  Overlap,   // one async all-reduce per parameter, launched during backward when it is ready
  Bucketed,  // one async all-reduce per bucket (--bucket-mb), launched when its last gradient is ready
  // The course's labs (docs/labs): the same collectives as the production strategy named.
  Lab,          // lab 04 (docs/labs/04-naive-dp): the student's naive DP; the same collectives as Naive
  LabOverlap,   // lab 05 (docs/labs/05-hooks-overlap): overlap, the student's hooks launch and wait
  LabBucketed,  // lab 06 (docs/labs/06-bucketing): bucketed with the student's bucket planner
};

inline constexpr std::array<Strategy, 4> kStrategies = {Strategy::Naive, Strategy::Flat, Strategy::Overlap,
                                                        Strategy::Bucketed};
inline constexpr std::array<Strategy, 3> kLabStrategies = {Strategy::Lab, Strategy::LabOverlap,
                                                            Strategy::LabBucketed};

std::string_view strategy_name(Strategy s);
// One line on what the strategy does, for help text.
std::string_view strategy_description(Strategy s);
// True when its collectives are launched asynchronously during backward (overlap, bucketed): they
// may overlap compute and run on the communication thread; the others all-reduce after backward.
bool is_async(Strategy s);
// The production strategy whose collectives `s` issues (a lab strategy: the one it is a version of;
// the others: themselves), for the performance model, the analysis and the shard planner.
Strategy modelled_as(Strategy s);
// True for the course's lab strategies (kLabStrategies).
bool is_lab(Strategy s);

// `what` names the source in the error, e.g. "--strategy" or "run record".
Strategy parse_strategy(std::string_view name, std::string_view what = "strategy");
// "naive, flat, overlap, bucketed, lab, lab-overlap, lab-bucketed": the choices as errors and help text list them.
std::string strategy_choices();

}  // namespace microddp::ddp
