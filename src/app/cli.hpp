// cli.hpp — the `microddp` command line: every subcommand registered on one CLI11 app, and the
// parse + validate step that runs before MPI starts.
//
// Split from main.cpp so the whole command line can be driven without a process or MPI: the
// fuzz target tests/fuzz/fuzz_command_line.cpp feeds it arbitrary argument vectors.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "app/command.hpp"

namespace microddp::app {

struct CommandLine {
  CLI::App app{"microddp — data-parallel deep-learning training from first principles (C++20, MPI)"};
  std::vector<std::pair<CLI::App*, std::unique_ptr<Command>>> commands;
  bool number_kinds_checked = false;  // parse_command_line added its integer/real checks
};

std::unique_ptr<CommandLine> build_command_line();

struct ParseOutcome {
  Command* chosen = nullptr;  // set when the command line is valid
  int exit_code = 0;          // when chosen is null: 0 (--help was printed or requested) or 2
  std::string error;          // the one-line error for exit code 2
  bool suggest_help = false;  // a CLI11 parse error (unknown option, bad type): point to --help
  bool help = false;          // --help/--help-all was given: print help_text, exit 0
  std::string help_text;
};

// The name among `names` that `word` is most likely a typo (at most 2 edits, transpositions count
// one) or an abbreviation (the start of exactly one name) of; nullopt when none is near.
std::optional<std::string> nearest_name(std::string_view word, const std::vector<std::string>& names);

// Parses and validates (Command::validate). Throws nothing but what a bug would throw: malformed
// input always ends in a ParseOutcome with exit_code 2 and a message.
ParseOutcome parse_command_line(CommandLine& cl, int argc, const char* const* argv);

}  // namespace microddp::app
