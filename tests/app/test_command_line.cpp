// test_command_line.cpp — the `microddp` command line without a process or MPI: strategies parsed
// by their one spelling, and option groups (a command offers exactly the options it uses).
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "app/cli.hpp"

namespace microddp::app {
namespace {

// The parse of `microddp ARGS...` on a fresh command line.
struct Parsed {
  std::unique_ptr<CommandLine> cl;
  ParseOutcome out;
};
Parsed parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"microddp"};
  argv.insert(argv.end(), args.begin(), args.end());
  Parsed p{build_command_line(), {}};
  p.out = parse_command_line(*p.cl, static_cast<int>(argv.size()), argv.data());
  return p;
}

// Exit 2 and a message containing every one of `parts`.
void expect_error(std::initializer_list<const char*> args, std::initializer_list<const char*> parts) {
  const Parsed p = parse(args);
  std::string line;
  for (const char* a : args) line += std::string(" ") + a;
  EXPECT_EQ(p.out.chosen, nullptr) << line;
  EXPECT_EQ(p.out.exit_code, 2) << line;
  for (const char* part : parts) EXPECT_NE(p.out.error.find(part), std::string::npos) << line << ": " << p.out.error;
}

TEST(CommandLine, StrategiesAreParsedOnce) {
  expect_error({"train", "--strategy", "telepathy"}, {"unknown --strategy 'telepathy'", "naive, flat, overlap, bucketed"});
  expect_error({"bench", "ddp", "--strategies", "naive,foo"}, {"--strategies", "'foo'"});
  expect_error({"analyze", "--scaling-strategy", "Flat"}, {"--scaling-strategy", "'Flat'"});
  EXPECT_NE(parse({"bench", "ddp", "--strategies", "flat,bucketed"}).out.chosen, nullptr);
  EXPECT_NE(parse({"train", "--strategy", "overlap"}).out.chosen, nullptr);
}

TEST(CommandLine, CommandsOfferOnlyTheOptionGroupsTheyUse) {
  // One process, no communication, no accumulation, no metrics: these would be silently ignored.
  for (const char* cmd : {"baseline", "manual"}) {
    for (const char* option : {"--accum-steps", "--metrics", "--comm", "--comm-timeout", "--strategy"}) {
      expect_error({cmd, option, "2"}, {option});
    }
    EXPECT_NE(parse({cmd, "--width", "8", "--optimizer", "sgd", "--log-every", "2"}).out.chosen, nullptr) << cmd;
  }
  expect_error({"hooks", "--metrics", "m.jsonl"}, {"--metrics"});
  expect_error({"bench", "ddp", "--strategy", "flat"}, {"--strategy"});
  expect_error({"analyze", "--trace", "t.json"}, {"--trace"});
  EXPECT_NE(parse({"train", "--metrics", "m.jsonl", "--trace", "t.json", "--accum-steps", "2", "--bucket-mb", "4",
                   "--on-nan", "skip", "--comm", "ring"})
                .out.chosen,
            nullptr);
  expect_error({"train", "--comm-timeout", "nan"}, {"--comm-timeout"});
  expect_error({"analyze", "--peak-gflops", "-1"}, {"--peak-gflops"});
}

}  // namespace
}  // namespace microddp::app
