// run_options.hpp — the options of a training run (src/run/) as `train` spells them on the command
// line, and their checks before MPI starts (usage errors, exit 2). The run library takes the plain
// option structs; only this file knows CLI11.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "run/best_model.hpp"
#include "run/run_control.hpp"
#include "run/training_data.hpp"

namespace microddp::app {

// --data --inputs-key --labels-key --data-memory-mb --checkpoint-every --checkpoint-dir --keep --resume --overwrite
// --allow-changed --init-from --checkpoint-writer
void add_run_control_options(CLI::App* sub, run::RunControlOptions& o);
void validate_run_control_options(const run::RunControlOptions& o);

// --shuffle --epochs --val-fraction --val-data --eval-every (train only). Returns --shuffle's option
// (validate_data_options asks whether it was given).
CLI::Option* add_data_options(CLI::App* sub, run::DataOptions& o);
// Combinations, before MPI starts: the options need --data, --epochs excludes --steps, one
// validation set at most, --eval-every needs one.
void validate_data_options(const run::DataOptions& o, const std::string& data_path, bool steps_given,
                           bool shuffle_given);

// --save-best --early-stop-patience --early-stop-min-delta
void add_best_model_options(CLI::App* sub, run::BestModelOptions& o);
// Needs a validation set (has_validation); --early-stop-min-delta needs --early-stop-patience.
void validate_best_model_options(const run::BestModelOptions& o, bool has_validation);

}  // namespace microddp::app
