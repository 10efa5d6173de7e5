// fault_plan.hpp — named fault points: the one way test hooks fire inside library code.
//
// A FaultPlan is a list of armed faults, each "at point P, on rank R, at occurrence N, with argument
// A". Code that has a named point asks fires(P, rank, occurrence) and, when it gets a fault back,
// performs that point's action (put a NaN somewhere, flip a bit, SIGKILL itself). The caller counts
// occurrences in its own terms: the trainer by step number (1-based, as printed), a checkpoint save
// by saves of this process (1-based). Each component documents its point names next to the code
// that has them (ddp/step_faults.hpp, io/checkpoint_save.hpp).
//
// Library code never reads the environment: `microddp` parses the MICRODDP_FAULT_* variables
// (app/fault_env.hpp) and passes the plan down (ddp::TrainConfig::faults, io::SaveOptions::faults).
// Contract: an empty plan (the default) costs one emptiness check per point; fires() allocates
// nothing, so points may sit inside the training step.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace microddp::core {

struct ArmedFault {
  std::string point;
  int rank = 0;
  std::int64_t occurrence = 1;
  std::string arg;  // point-specific (the parameter a perturbation flips); empty if unused
};

class FaultPlan {
 public:
  void arm(ArmedFault fault) { armed_.push_back(std::move(fault)); }
  bool empty() const { return armed_.empty(); }
  const std::vector<ArmedFault>& armed() const { return armed_; }

  // The fault armed at `point` for this rank and occurrence, or nullptr (the usual answer).
  const ArmedFault* fires(std::string_view point, int rank, std::int64_t occurrence) const {
    for (const auto& f : armed_) {
      if (f.rank == rank && f.occurrence == occurrence && f.point == point) return &f;
    }
    return nullptr;
  }

 private:
  std::vector<ArmedFault> armed_;
};

}  // namespace microddp::core
