// cli_values.hpp — the value types of the command line that CLI11 does not check by itself: real
// numbers that must be finite and inside a range, and strategies.
//
// Contract: every option of these kinds is added through the functions here, so one parser decides
// what a valid value is and a bad value fails the parse (exit 2) with a message naming the option.
//   * Finite reals: CLI11's Range lets NaN through (every comparison with NaN is false); finite_range
//     does not, and refuses inf and text as well.
//   * Strategies: read by ddp::parse_strategy (one spelling of every strategy); an unknown name
//     fails naming the option and the choices, and the help lists every strategy with what it does.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "ddp/strategy.hpp"

namespace microddp::app {

// A finite number in [lo, hi] (applies to every element of a list option).
CLI::Validator finite_range(double lo, double hi);

// `description` is followed by the list of strategies in the help.
CLI::Option* add_strategy_option(CLI::App* sub, const std::string& name, ddp::Strategy& target,
                                 const std::string& description);
// A comma-separated list of strategies, in the order given.
CLI::Option* add_strategy_list_option(CLI::App* sub, const std::string& name, std::vector<ddp::Strategy>& target,
                                      const std::string& description);

}  // namespace microddp::app
