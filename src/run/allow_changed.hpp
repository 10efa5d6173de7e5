// allow_changed.hpp — `train --allow-changed LIST`: the settings a resume may change.
//
// A resume must match the checkpoint in every `resume` field (ddp/train_config_fields.hpp). Those
// marked `changeable` decide only the steps still to come (the learning-rate plan), so continuing a
// run with other values of them changes nothing already computed; --allow-changed names them:
//   lr            the base learning rate
//   lr-schedule   the schedule and all its settings (lr_schedule, warmup_steps, min_lr,
//                 decay_steps, lr_milestones, lr_gamma); each may also be named alone
//   steps, epochs the run's length: always free, accepted for clarity
// Names take '-' or '_'. Any other name is a core::UsageError saying why (exit 2).
#pragma once

#include <string>
#include <vector>

namespace microddp::run {

// The field names the list allows (steps/epochs add none). Throws core::UsageError.
std::vector<std::string> parse_allow_changed(const std::string& list);

}  // namespace microddp::run
