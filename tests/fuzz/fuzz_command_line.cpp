// fuzz_command_line.cpp — the whole `microddp` command line (every subcommand, every option and
// Command::validate) against arbitrary argument vectors. Input: arguments separated by '\n'.
// Contract: parse_command_line returns (valid, help, or exit code 2 with a message) and throws
// nothing; a valid outcome always names a command.
#include <cstdlib>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"microddp"};
  std::string cur;
  for (std::size_t i = 0; i < size && args.size() < 64; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(cur);
      cur.clear();
    } else if (c != '\0') {
      cur += c;
    }
  }
  if (!cur.empty()) args.push_back(cur);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  auto cl = microddp::app::build_command_line();
  const auto out = microddp::app::parse_command_line(*cl, static_cast<int>(argv.size()), argv.data());
  if (out.chosen == nullptr && !out.help && (out.exit_code != 2 || out.error.empty())) std::abort();
  return 0;
}
