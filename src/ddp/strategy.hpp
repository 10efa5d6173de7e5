// strategy.hpp — the gradient-synchronisation strategies, named once: the enum every layer passes
// around (ddp builds them, perf models them, app parses and lists them) and their one spelling.
//
// Contract: kStrategies lists every production strategy in the order help text, benchmarks and the
// analysis present them (cheapest idea first). `lab` is the course's lab 04 (docs/labs): a student's
// naive data parallelism, built outside this library (grad_sync.hpp: set_lab_sync_maker); it is
// parsed and named like the others but is in no default list, and is modelled as `naive`.
// strategy_name() and parse_strategy() are inverse; a name that is not a strategy is a
// core::UsageError naming the option it came from and listing the choices.
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
  Lab,       // lab 04 (docs/labs/04-naive-dp): the student's naive DP; the same collectives as Naive
};

inline constexpr std::array<Strategy, 4> kStrategies = {Strategy::Naive, Strategy::Flat, Strategy::Overlap,
                                                        Strategy::Bucketed};

std::string_view strategy_name(Strategy s);
// One line on what the strategy does, for help text.
std::string_view strategy_description(Strategy s);
// True when its collectives are launched asynchronously during backward (overlap, bucketed): they
// may overlap compute and run on the communication thread; the others all-reduce after backward.
bool is_async(Strategy s);
// The production strategy whose collectives `s` issues (Lab: Naive; the others: themselves), for
// the performance model and the shard planner.
Strategy modelled_as(Strategy s);

// `what` names the source in the error, e.g. "--strategy" or "run record".
Strategy parse_strategy(std::string_view name, std::string_view what = "strategy");
// "naive, flat, overlap, bucketed, lab": the choices as errors and help text list them.
std::string strategy_choices();

}  // namespace microddp::ddp
