// repeated_options.hpp — an option given twice: the last value wins.
//
// Job scripts pass their defaults and then the user's EXTRA_ARGS (jobs/examples/fashion_mnist.sh:
// `... --lr "$LR" $EXTRA_ARGS`), so `--lr 0.001 ... --lr 0.01` must mean 0.01, as it does for most
// Unix tools; CLI11's default refuses it ("--lr: At Most 1 required but received 2"). Every option
// that takes one value (flags included) gets CLI11's TakeLast policy; options that take several
// values (--from-idx IMAGES LABELS) keep theirs.
#pragma once

#include <CLI/CLI.hpp>

namespace microddp::app {

// On every single-value option of `app` and its subcommands, recursively.
void last_value_wins(CLI::App& app);

}  // namespace microddp::app
