// test_command_line.cpp — the `microddp` command line without a process or MPI: strategies parsed
// by their one spelling, option groups (a command offers exactly the options it uses), sizes with
// unit suffixes, unknown commands named, and --help-all reaching every command's options.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "app/cli_values.hpp"
#include "ddp/strategy.hpp"

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
  expect_error({"train", "--strategy", "telepathy"},
               {"unknown --strategy 'telepathy'", "naive, flat, overlap, bucketed"});
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

TEST(CommandLine, ByteSizesTakeBinarySuffixes) {
  EXPECT_EQ(parse_byte_size("4096"), 4096);
  EXPECT_EQ(parse_byte_size("0"), 0);
  EXPECT_EQ(parse_byte_size("4K"), 4096);
  EXPECT_EQ(parse_byte_size("4k"), 4096);
  EXPECT_EQ(parse_byte_size("4KiB"), 4096);
  EXPECT_EQ(parse_byte_size("4KB"), 4096);
  EXPECT_EQ(parse_byte_size("1M"), 1 << 20);
  EXPECT_EQ(parse_byte_size("256M"), std::int64_t{256} << 20);
  EXPECT_EQ(parse_byte_size("3G"), std::int64_t{3} << 30);
  EXPECT_EQ(parse_byte_size("7B"), 7);
  for (const char* bad : {"", "M", "1.5M", "-1", "+1", " 1", "1 M", "1X", "1MM", "1MiBs", "1T", "0x10",
                          "99999999999999999999", "4294967297G"}) {
    EXPECT_FALSE(parse_byte_size(bad).has_value()) << "'" << bad << "'";
  }
  for (const std::int64_t v : {std::int64_t{0}, std::int64_t{4}, std::int64_t{1000}, std::int64_t{1} << 10,
                               std::int64_t{3} << 20, std::int64_t{5} << 30, (std::int64_t{1} << 20) + 1}) {
    EXPECT_EQ(parse_byte_size(format_byte_size(v)), v) << format_byte_size(v);
  }
  EXPECT_EQ(format_byte_size(std::int64_t{256} << 20), "256M");

  EXPECT_NE(
      parse({"bench", "collectives", "--min-bytes", "1M", "--max-bytes", "256M", "--overlap-bytes", "64K"}).out.chosen,
      nullptr);
  expect_error({"bench", "collectives", "--min-bytes", "1.5M"}, {"--min-bytes", "1.5M"});
  expect_error({"bench", "collectives", "--max-bytes", "2K", "--min-bytes", "4K"},
               {"--min-bytes 4096 > --max-bytes 2048"});
  expect_error({"bench", "collectives", "--max-bytes", "2"}, {"--max-bytes"});  // below the smallest size
  expect_error({"bench", "collectives", "--min-bytes", "2"}, {"--min-bytes 2 is smaller than one float (4 bytes)"});
  EXPECT_NE(parse({"bench", "collectives", "--min-bytes", "2", "--dtype", "half"}).out.chosen, nullptr);
}

// nccl-tests' habits: -b -e -f sizes, -n iters, -w warmup, -c check, -d dtype, -o redop.
TEST(CommandLine, BenchCollectivesTakesNcclTestsShortOptions) {
  EXPECT_NE(parse({"bench", "collectives", "-b", "8", "-e", "128M", "-f", "2", "-n", "5", "-w", "1", "-c", "0", "-d",
                   "bfloat16", "-o", "max"})
                .out.chosen,
            nullptr);
  for (const char* t : {"float", "double", "half", "bfloat16", "int32"}) {
    EXPECT_NE(parse({"bench", "collectives", "-d", t}).out.chosen, nullptr) << t;
  }
  expect_error({"bench", "collectives", "-d", "fp8"}, {"--dtype", "fp8"});
  expect_error({"bench", "collectives", "-c", "2"}, {"--check"});
  expect_error({"bench", "collectives", "-e", "1X"}, {"--max-bytes"});
}

TEST(CommandLine, OverlapTimesMustBeNumbers) {
  EXPECT_NE(parse({"bench", "collectives", "--overlap-ms", "0,2.5,10"}).out.chosen, nullptr);
  expect_error({"bench", "collectives", "--overlap-ms", "abc"}, {"--overlap-ms", "'abc'"});
  expect_error({"bench", "collectives", "--overlap-ms", "0,5ms"}, {"--overlap-ms", "'5ms'"});
  expect_error({"bench", "collectives", "--overlap-ms", "-1"}, {"--overlap-ms", "'-1'"});
  expect_error({"bench", "collectives", "--overlap-ms", "inf"}, {"--overlap-ms", "'inf'"});
}

TEST(CommandLine, UnknownCommandsAreNamedWithTheRealOnes) {
  expect_error({"nosuchcommand"}, {"unknown command 'nosuchcommand'", "train", "analyze", "bench"});
  expect_error({"bench", "nosuch"}, {"unknown command 'bench nosuch'", "compute, collectives, ddp, links"});
  expect_error({}, {"no command given (commands: train,"});
  expect_error({"bench"}, {"no command given (bench commands: compute, collectives, ddp, links)"});
  // An unknown option before the command is named as well; after a command, words are its own.
  expect_error({"--bogus"}, {"unknown option '--bogus' before the command", "train"});
  expect_error({"bench", "--bogus=1"}, {"unknown option '--bogus'", "bench commands"});
  EXPECT_NE(parse({"train", "--steps", "3"}).out.chosen, nullptr);
}

TEST(CommandLine, HelpAllShowsEveryCommandsOptions) {
  const Parsed p = parse({"--help-all"});
  ASSERT_TRUE(p.out.help);
  for (const char* part : {"--strategy", "--min-bytes", "--overlap-ms", "--strategies", "--rounds", "--data"}) {
    EXPECT_NE(p.out.help_text.find(part), std::string::npos) << part;
  }
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Five commands take a strategy; what each strategy does is said once, at the end of --help-all,
// and at the end of the help of each command that takes one.
TEST(CommandLine, HelpAllSaysEachStrategyOnce) {
  const std::string all = parse({"--help-all"}).out.help_text;
  for (const ddp::Strategy s : ddp::kStrategies) {
    EXPECT_EQ(occurrences(all, std::string(ddp::strategy_description(s))), 1u) << ddp::strategy_name(s);
  }
  EXPECT_GE(occurrences(all, "naive | flat | overlap | bucketed"), 5u);  // the names, under each option
  const std::string train = parse({"train", "--help"}).out.help_text;
  EXPECT_EQ(occurrences(train, std::string(ddp::strategy_description(ddp::Strategy::Bucketed))), 1u);
  EXPECT_EQ(occurrences(parse({"--help"}).out.help_text, "Strategies ("), 0u);  // the command list only
}

TEST(CommandLine, HelpShowsTypesAsWords) {
  const std::string all = parse({"--help-all"}).out.help_text;
  for (const char* part :
       {"--width <integer in [1, 2^24]> (default 128)", "--lr <number in [1e-12, 1000]> (default 0.001)",
        "--optimizer <one of adam, adamw, sgd> (default adam)", "--seed <integer >= 0> (default 1)",
        "--min-bytes <size in bytes> (default 8)", "--strategy <strategy> (default bucketed)",
        "--device <text> (default auto) (or $MICRODDP_DEVICE)"}) {
    EXPECT_NE(all.find(part), std::string::npos) << part;
  }
  for (const char* raw : {"INT:INT", "FLOAT:FLOAT", "TEXT:{", "UINT"})
    EXPECT_EQ(all.find(raw), std::string::npos) << raw;
}

TEST(CommandLine, BadValuesSayWhatIsWrong) {
  expect_error({"train", "--width", "abc"}, {"--width: value 'abc' is not an integer"});
  expect_error({"train", "--width", "3.5"}, {"--width: value '3.5' is not an integer"});
  expect_error({"train", "--steps", "1e99"}, {"--steps: value '1e99' is not an integer"});
  expect_error({"train", "--seed", "minus-one"}, {"--seed: value 'minus-one' is not an integer"});
  expect_error({"train", "--seed", "-3"}, {"--seed: value '-3' is not an integer >= 0"});
  expect_error({"train", "--lr", "fast"}, {"--lr: value 'fast' is not a number"});
  expect_error({"train", "--steps", "99999999999999999999"}, {"--steps: value '99999999999999999999' is too large"});
  expect_error({"train", "--width", "0"}, {"--width", "not in range"});  // an integer, out of range
  expect_error({"bench", "collectives", "--iters", "x"}, {"--iters: value 'x' is not an integer"});
  EXPECT_NE(parse({"train", "--width", "0x10"}).out.chosen, nullptr);  // CLI11 reads hexadecimal too
}

// An option given twice: the last value wins (job scripts append the user's EXTRA_ARGS to their own
// defaults; today's CLI11 default said "--steps: At Most 1 required but received 2").
TEST(CommandLine, TheLastOfARepeatedOptionWins) {
  const Parsed p = parse({"train", "--steps", "5", "--lr", "0.001", "--steps", "6", "--lr", "0.01", "--tf32", "--tf32"});
  ASSERT_NE(p.out.chosen, nullptr) << p.out.error;
  CLI::App* train = p.cl->app.get_subcommand("train");
  EXPECT_EQ(train->get_option("--steps")->as<std::int64_t>(), 6);
  EXPECT_EQ(train->get_option("--lr")->as<double>(), 0.01);
  // Options of several values keep theirs: the two files of --from-idx.
  const Parsed idx = parse({"make-dataset", "--from-idx", "a", "b", "--from-idx", "c", "d", "out.h5"});
  EXPECT_EQ(idx.out.exit_code, 2);
}

TEST(CommandLine, UnknownOptionsSuggestTheNearest) {
  expect_error({"train", "--widht", "3"}, {"unknown option '--widht' for 'train' (did you mean --width?)"});
  expect_error({"train", "--widht=3"}, {"unknown option '--widht' for 'train' (did you mean --width?)"});
  expect_error({"bench", "collectives", "--itres", "3"},
               {"unknown option '--itres' for 'bench collectives' (did you mean --iters?)"});
  expect_error({"train", "--fooo", "1", "--barr"}, {"unknown options '--fooo', '--barr' for 'train'"});
  expect_error({"train", "--width", "3", "4"}, {"unexpected argument '4' for 'train'"});
  expect_error({"trian"}, {"unknown command 'trian'", "(did you mean train?)"});
  expect_error({"--verison"}, {"unknown option '--verison' before the command", "(did you mean --version?)"});
  const Parsed far = parse({"train", "--zzz"});
  EXPECT_EQ(far.out.error.find("did you mean"), std::string::npos) << far.out.error;
}

// An empty value is never "not given": `--data "$UNSET"` in a script must fail, not train on the
// synthetic set. Every option of every command that takes a value, walked from the command tree
// (so an option added later is covered without touching this test), in both spellings, and the
// positional arguments.
void each_command(CLI::App& app, const std::vector<std::string>& path,
                  const std::function<void(CLI::App&, const std::vector<std::string>&)>& visit) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    std::vector<std::string> p = path;
    p.push_back(sub->get_name());
    visit(*sub, p);
    each_command(*sub, p, visit);
  }
}

Parsed parse_words(const std::vector<std::string>& words) {
  std::vector<const char*> argv{"microddp"};
  for (const std::string& w : words) argv.push_back(w.c_str());
  Parsed p{build_command_line(), {}};
  p.out = parse_command_line(*p.cl, static_cast<int>(argv.size()), argv.data());
  return p;
}

TEST(CommandLine, EmptyValuesAreUsageErrors) {
  auto cl = build_command_line();
  int options = 0, positionals = 0;
  each_command(cl->app, {}, [&](CLI::App& cmd, const std::vector<std::string>& path) {
    for (const CLI::Option* opt : cmd.get_options()) {
      if (opt->get_name() == "--help" || opt->get_name() == "--help-all") continue;
      const bool flag = opt->get_expected_max() == 0;  // takes no value: only `--flag=` can be empty
      std::vector<std::vector<std::string>> lines;
      std::string shown;
      if (opt->get_positional()) {
        // Empty in the position of this argument: the positionals before it get a name.
        std::vector<std::string> words = path;
        for (const CLI::Option* before : cmd.get_options([](const CLI::Option* o) { return o->get_positional(); })) {
          if (before == opt) break;
          words.push_back("x.h5");
        }
        words.push_back("");
        lines.push_back(words);
        shown = opt->get_name();
        ++positionals;
      } else {
        const std::string name = opt->get_lnames().empty() ? "-" + opt->get_snames()[0] : "--" + opt->get_lnames()[0];
        std::vector<std::string> separate = path, joined = path;
        separate.insert(separate.end(), {name, ""});
        joined.push_back(name + "=");
        lines = {joined};
        if (!flag) lines.push_back(separate);
        shown = name;
        ++options;
      }
      for (const auto& words : lines) {
        const Parsed p = parse_words(words);
        std::string line;
        for (const std::string& w : words) line += " '" + w + "'";
        EXPECT_EQ(p.out.chosen, nullptr) << line;
        EXPECT_EQ(p.out.exit_code, 2) << line;
        EXPECT_NE(p.out.error.find("an empty value"), std::string::npos) << line << ": " << p.out.error;
        EXPECT_NE(p.out.error.find(shown), std::string::npos) << line << ": " << p.out.error;
      }
    }
  });
  EXPECT_GT(options, 200) << "the walk found too few options";
  EXPECT_GE(positionals, 3) << "export's two files and make-dataset's";
  // The cases of the report, spelt as a script would.
  expect_error({"train", "--data", ""}, {"--data", "an empty value"});
  expect_error({"train", "--resume="}, {"--resume", "an empty value"});
  expect_error({"export", "ckpt.h5", ""}, {"an empty value"});
}

TEST(CommandLine, NearestName) {
  const std::vector<std::string> names = {"--width", "--depth", "--checkpoint-dir", "--checkpoint-every", "--iters"};
  EXPECT_EQ(nearest_name("--widht", names), "--width");  // a transposition is one edit
  EXPECT_EQ(nearest_name("--with", names), "--width");
  EXPECT_EQ(nearest_name("--dpeth", names), "--depth");
  EXPECT_EQ(nearest_name("--checkpoint-d", names), "--checkpoint-dir");  // the start of one name
  EXPECT_FALSE(nearest_name("--checkpoint", names));                     // of two: no guess
  EXPECT_FALSE(nearest_name("--colour", names));
  EXPECT_FALSE(nearest_name("-x", names));
}

TEST(CommandLine, VersionSaysWhatTheBuildHas) {
  const Parsed p = parse({"--version"});
  ASSERT_TRUE(p.out.help) << p.out.error;
  EXPECT_EQ(p.out.exit_code, 0);
  const std::string& v = p.out.help_text;
  EXPECT_EQ(v.rfind("microddp 0.", 0), 0u) << v;
  for (const char* part : {"(commit ", "CUDA", "NCCL", "MPI", "MPI 3", "BLAS", "OpenBLAS", "HDF5", "parallel"}) {
    EXPECT_NE(v.find(part), std::string::npos) << part << " in\n" << v;
  }
}

}  // namespace
}  // namespace microddp::app
