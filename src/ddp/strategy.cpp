// strategy.cpp — names, descriptions and the parser of the gradient-synchronisation strategies.
#include "ddp/strategy.hpp"

#include "core/error.hpp"

namespace microddp::ddp {

std::string_view strategy_name(Strategy s) {
  switch (s) {
    case Strategy::Naive:
      return "naive";
    case Strategy::Flat:
      return "flat";
    case Strategy::Overlap:
      return "overlap";
    case Strategy::Bucketed:
      return "bucketed";
    case Strategy::Lab:
      return "lab";
    case Strategy::LabOverlap:
      return "lab-overlap";
    case Strategy::LabBucketed:
      return "lab-bucketed";
  }
  return "?";
}

std::string_view strategy_description(Strategy s) {
  switch (s) {
    case Strategy::Naive:
      return "one blocking all-reduce per parameter after backward";
    case Strategy::Flat:
      return "one blocking all-reduce of all gradients after backward";
    case Strategy::Overlap:
      return "one async all-reduce per parameter, launched during backward";
    case Strategy::Bucketed:
      return "one async all-reduce per bucket (--bucket-mb), launched during backward";
    case Strategy::Lab:
      return "YOUR naive data parallelism, lab 04 (docs/labs/04-naive-dp)";
    case Strategy::LabOverlap:
      return "overlap with YOUR hooks, lab 05 (docs/labs/05-hooks-overlap)";
    case Strategy::LabBucketed:
      return "bucketed with YOUR bucket planner, lab 06 (docs/labs/06-bucketing)";
  }
  return "?";
}

bool is_async(Strategy s) {
  s = modelled_as(s);
  return s == Strategy::Overlap || s == Strategy::Bucketed;
}

Strategy modelled_as(Strategy s) {
  switch (s) {
    case Strategy::Lab:
      return Strategy::Naive;
    case Strategy::LabOverlap:
      return Strategy::Overlap;
    case Strategy::LabBucketed:
      return Strategy::Bucketed;
    default:
      return s;
  }
}

bool is_lab(Strategy s) { return modelled_as(s) != s; }

Strategy parse_strategy(std::string_view name, std::string_view what) {
  for (Strategy s : kStrategies) {
    if (strategy_name(s) == name) return s;
  }
  for (Strategy s : kLabStrategies) {
    if (strategy_name(s) == name) return s;
  }
  MDDP_USAGE_CHECK(false, "unknown " << what << " '" << name << "' (choose " << strategy_choices() << ")");
  return Strategy::Naive;  // not reached
}

std::string strategy_choices() {
  std::string list;
  for (Strategy s : kStrategies) list += (list.empty() ? "" : ", ") + std::string(strategy_name(s));
  for (Strategy s : kLabStrategies) list += ", " + std::string(strategy_name(s));
  return list;
}

}  // namespace microddp::ddp
