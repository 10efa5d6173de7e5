// strategy.cpp — the strategy table: the production plans and rows, the rows registered at start-up,
// and the names, descriptions, plans and parser read from them.
#include "ddp/strategy.hpp"

#include <deque>

#include "core/error.hpp"

namespace microddp::ddp {

using Params = std::vector<model::ParamInfo>;

std::vector<Bucket> per_parameter_buckets(const Params& params, std::int64_t, const GradSyncOptions&) {
  return plan_per_parameter(params);
}
std::vector<Bucket> one_bucket(const Params& params, std::int64_t flat_count, const GradSyncOptions&) {
  return plan_one_bucket(params, flat_count);
}
std::vector<Bucket> capped_buckets(const Params& params, std::int64_t, const GradSyncOptions& options) {
  const BucketCaps caps = bucket_caps(options);
  return plan_buckets(params, caps.cap_bytes, caps.first_cap_bytes);
}

namespace {

// The production rows, at the indices of their constants (strategy.hpp).
const StrategyRow kProductionRows[] = {
    {.name = "naive",
     .description = "one blocking all-reduce per parameter after backward",
     .plan = &per_parameter_buckets,
     .launch = Launch::AfterBackward,
     .graph_obstacle = {}},
    {.name = "flat",
     .description = "one blocking all-reduce of all gradients after backward",
     .plan = &one_bucket,
     .launch = Launch::AfterBackward,
     .graph_obstacle = {}},
    {.name = "overlap",
     .description = "one async all-reduce per parameter, launched during backward",
     .plan = &per_parameter_buckets,
     .launch = Launch::DuringBackward,
     .graph_obstacle = {}},
    {.name = "bucketed",
     .description = "one async all-reduce per bucket (--bucket-mb), launched during backward",
     .plan = &capped_buckets,
     .launch = Launch::DuringBackward,
     .reads_bucket_caps = true,
     .graph_obstacle = {}},
};

// A deque: registering a row never moves the others (strategy_row hands out references).
std::deque<StrategyRow>& table() {
  static std::deque<StrategyRow> rows = [] {
    std::deque<StrategyRow> r(std::begin(kProductionRows), std::end(kProductionRows));
    const std::string_view at_their_index[] = {"naive", "flat", "overlap", "bucketed"};  // strategy.hpp's constants
    for (std::size_t i = 0; i < r.size(); ++i) {
      MDDP_CHECK(r[i].name == at_their_index[i], "production strategy row " << r[i].name << " is not at its index");
    }
    return r;
  }();
  return rows;
}

}  // namespace

Strategy register_strategy(const StrategyRow& row) {
  auto& rows = table();
  for (const StrategyRow& r : rows) MDDP_CHECK(r.name != row.name, "strategy '" << row.name << "' registered twice");
  MDDP_CHECK(row.plan != nullptr, "strategy '" << row.name << "' has no bucket plan");
  rows.push_back(row);
  return Strategy(rows.size() - 1);
}

const StrategyRow& strategy_row(Strategy s) {
  const auto& rows = table();
  MDDP_CHECK(s.index() < rows.size(), "strategy " << s.index() << " is not in the table");
  return rows[s.index()];
}

std::vector<Strategy> all_strategies() {
  std::vector<Strategy> all;
  for (std::size_t i = 0; i < table().size(); ++i) all.push_back(Strategy(i));
  return all;
}

std::string_view strategy_name(Strategy s) { return strategy_row(s).name; }
std::string_view strategy_description(Strategy s) { return strategy_row(s).description; }
bool is_async(Strategy s) { return strategy_row(s).launch == Launch::DuringBackward; }

std::vector<Bucket> strategy_plan(Strategy s, const Params& params, std::int64_t flat_count,
                                  const GradSyncOptions& options) {
  return strategy_row(s).plan(params, flat_count, options);
}

Strategy parse_strategy(std::string_view name, std::string_view what) {
  for (const Strategy s : all_strategies()) {
    if (strategy_name(s) == name) return s;
  }
  MDDP_USAGE_CHECK(false, "unknown " << what << " '" << name << "' (choose " << strategy_choices() << ")");
  return Strategy::Naive;  // not reached
}

std::string strategy_choices() {
  std::string list;
  for (const StrategyRow& r : table()) list += (list.empty() ? "" : ", ") + std::string(r.name);
  return list;
}

}  // namespace microddp::ddp
