// cli_values.hpp — the value types of the command line that CLI11 does not check by itself: real
// numbers that must be finite and inside a range, sizes in bytes with a unit suffix, and strategies.
//
// Contract: every option of these kinds is added through the functions here, so one parser decides
// what a valid value is and a bad value fails the parse (exit 2) with a message naming the option.
//   * Finite reals: CLI11's Range lets NaN through (every comparison with NaN is false); finite_range
//     does not, and refuses inf and text as well.
//   * Byte sizes: a whole number of bytes with an optional binary suffix, as collective benchmarks
//     take them: K = 2^10, M = 2^20, G = 2^30 (upper or lower case, optionally followed by "iB" or
//     "B": 4K, 4k, 4KiB and 4KB all mean 4096 bytes). No fractions, signs or spaces.
//   * Strategies: read by ddp::parse_strategy (one spelling of every strategy); an unknown name
//     fails naming the option and the choices, and the help lists every strategy with what it does.
//   * Gradient compression modes: one of the mode table's names (ddp/compression/compression_config.hpp),
//     parsed here into a ddp::CompressionMode; the help lists the table's rows.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/precision.hpp"
#include "ddp/compression/compression_config.hpp"
#include "ddp/strategy.hpp"

namespace microddp::app {

// A finite number in [lo, hi] (applies to every element of a list option).
CLI::Validator finite_range(double lo, double hi);

// The whole of `text` as a finite real (no trailing characters); nullopt otherwise.
std::optional<double> parse_finite_real(std::string_view text);

// The whole of `text` as a byte size (see above); nullopt when malformed or above 2^62 bytes.
std::optional<std::int64_t> parse_byte_size(std::string_view text);
// "4096", "1K", "256M", "1G": the shortest spelling that parse_byte_size reads back.
std::string format_byte_size(std::int64_t bytes);
// A byte-size option with a value in [lo, hi] bytes; the help shows the default with its suffix.
CLI::Option* add_byte_size_option(CLI::App* sub, const std::string& name, std::int64_t& target,
                                  const std::string& description, std::int64_t lo, std::int64_t hi);

// What every strategy does, one line each: the footer of the help of a command that takes one, and
// of --help-all (once, however many commands take a strategy).
std::string strategy_descriptions();
// `description` is followed by the names of the strategies in the help; the command's help ends
// with strategy_descriptions().
CLI::Option* add_strategy_option(CLI::App* sub, const std::string& name, ddp::Strategy& target,
                                 const std::string& description);
// A comma-separated list of strategies, in the order given.
CLI::Option* add_strategy_list_option(CLI::App* sub, const std::string& name, std::vector<ddp::Strategy>& target,
                                      const std::string& description);

// A compression mode; `description` is followed by every mode's name and help ("none (fp32), ...").
CLI::Option* add_compression_option(CLI::App* sub, const std::string& name, ddp::CompressionMode& target,
                                    const std::string& description);
// A comma-separated list of compression modes; `description` is followed by "(none,fp16,...)".
CLI::Option* add_compression_list_option(CLI::App* sub, const std::string& name,
                                         std::vector<ddp::CompressionMode>& target, const std::string& description);

// `--precision NAME` and its alias flag `--tf32` (train, bench compute): tf32 when the flag is set,
// else NAME; a usage error when both were given and disagree (`given`: --precision's option).
core::Precision precision_from_options(const std::string& name, const CLI::Option* given, bool tf32_flag);

// The --device, --precision and --tf32 options of the commands that run the model on the CPU unless
// asked (bench ddp, analyze, hooks): one wording and one resolution for all of them.
struct ComputeOptions {
  std::string device = "cpu";
  std::string precision = "fp32";
  CLI::Option* precision_option = nullptr;  // whether --precision was given (against --tf32)
  bool tf32 = false;
  core::Precision resolved_precision() const { return precision_from_options(precision, precision_option, tf32); }
};
// `what` completes the --device help: "Where <what> computes, as train --device: ...".
void add_compute_options(CLI::App* sub, ComputeOptions& o, const std::string& what);

}  // namespace microddp::app
