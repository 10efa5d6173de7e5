// lr_schedule_options.hpp — the learning-rate schedule's options of `train` (model/lr_schedule.hpp
// has the formulas): --lr-schedule constant|cosine|linear|step, --warmup-steps, --min-lr,
// --decay-steps (cosine, linear), --lr-milestones, --lr-gamma (step).
//
// validate_lr_schedule_options() refuses a setting the chosen schedule does not use (exit 2);
// the run (run/training_run.cpp, resolve_lr_schedule) then gives --decay-steps its default, the run's total steps (with --epochs:
// epochs x steps per epoch), once the steps are known. The resolved value is what checkpoints store,
// so a resume with another --steps and no --decay-steps is refused unless --allow-changed says so:
// it would change the decay of the steps to come.
#pragma once

#include <CLI/CLI.hpp>

#include "model/lr_schedule.hpp"

namespace microddp::app {

struct LrScheduleOptions {
  std::string kind = "constant";
  CLI::Option* min_lr = nullptr;  // given? (settings the schedule does not use are refused)
  CLI::Option* decay_steps = nullptr;
  CLI::Option* milestones = nullptr;
  CLI::Option* gamma = nullptr;
};

void add_lr_schedule_options(CLI::App* sub, LrScheduleOptions& o, model::LrScheduleConfig& c);
void validate_lr_schedule_options(const LrScheduleOptions& o, model::LrScheduleConfig& c);

}  // namespace microddp::app
