// lr_schedule.hpp — the learning rate of every optimizer step, as a closed-form function of the
// step's index (`train --lr-schedule`, docs/training_recipes.md).
//
// For the step with 0-based index s (the step printed as s + 1), base = --lr, W = --warmup-steps,
// D = --decay-steps (the step count at which the decay reaches min = --min-lr, warmup included):
//   warmup   s < W:   base * (s + 1) / W                  (llm.c's warmup: the first step is not 0)
//   constant          base
//   cosine            min + (base - min) * (1 + cos(pi * (s - W) / (D - W))) / 2,   min for s >= D
//   linear            base + (min - base) * (s - W) / (D - W),                      min for s >= D
//   step              base * gamma^k, k = the number of milestones m <= s
// computed in double and rounded to float once. These are torch.optim.lr_scheduler's closed forms
// (CosineAnnealingLR with T_max = D - W and eta_min = min, LinearLR's end point, MultiStepLR), shifted
// by the warmup; tests/model/test_lr_schedule.cpp checks them against numbers computed by hand.
//
// Contract: lr(s) is a pure function of (configuration, s): the same on every rank, device and world
// size, and after a resume (a checkpoint stores the configuration, not a scheduler state). The
// trainer asks it once per step, on the host, and hands the value to the optimizer (Optimizer::set_lr),
// whose per-step scalars carry it to the device, also into a replayed CUDA graph.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.hpp"

namespace microddp::model {

enum class LrScheduleKind { Constant, Cosine, Linear, Step };
inline constexpr auto kLrScheduleNames =
    core::enum_names<LrScheduleKind>({{LrScheduleKind::Constant, "constant"}, {LrScheduleKind::Cosine, "cosine"},
                                      {LrScheduleKind::Linear, "linear"}, {LrScheduleKind::Step, "step"}});
inline std::string_view lr_schedule_name(LrScheduleKind k) { return kLrScheduleNames.name(k); }
// "constant" | "cosine" | "linear" | "step"; throws core::UsageError otherwise.
inline LrScheduleKind parse_lr_schedule(std::string_view name) { return kLrScheduleNames.parse(name, "--lr-schedule"); }

struct LrScheduleConfig {
  LrScheduleKind kind = LrScheduleKind::Constant;
  std::int64_t warmup_steps = 0;  // W
  float min_lr = 0.0f;            // cosine, linear: the rate the decay ends at
  // cosine, linear: D, the step count at which the decay reaches min_lr (warmup included); `train`
  // sets it to the run's steps when not given (0 here means "not set").
  std::int64_t decay_steps = 0;
  std::string milestones;  // step: "M1,M2,...", strictly increasing step counts ("" for the others)
  float gamma = 0.1f;      // step: the factor at each milestone
};

// "100,200" -> {100, 200}; throws core::UsageError naming `option` unless the list is strictly
// increasing positive integers.
std::vector<std::int64_t> parse_milestones(const std::string& text, std::string_view option);

class LrSchedule {
 public:
  // Throws core::UsageError when the combination is invalid (D <= W for a decay, min_lr > base_lr,
  // gamma outside (0, 1], no milestones for step, ...).
  LrSchedule(float base_lr, const LrScheduleConfig& config);

  // The rate of the step with 0-based index s (s >= 0).
  float lr(std::int64_t s) const;
  // Every step gets base_lr (constant, no warmup): runs print what they always printed.
  bool is_constant() const { return config_.kind == LrScheduleKind::Constant && config_.warmup_steps == 0; }
  // For the run's header: "cosine from 0.001 to 0 over steps 101..4200 after 100 warmup steps".
  std::string describe() const;

 private:
  float base_;
  LrScheduleConfig config_;
  std::vector<std::int64_t> milestones_;
};

}  // namespace microddp::model
