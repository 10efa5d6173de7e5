// strategy.cpp — the strategy table: the production rows, the rows registered at start-up, and the
// names, descriptions and parser read from them.
#include "ddp/strategy.hpp"

#include <deque>

#include "core/error.hpp"
#include "ddp/bucket_planner.hpp"
#include "ddp/bucketed_sync.hpp"
#include "ddp/flat_sync.hpp"
#include "ddp/grad_sync.hpp"
#include "ddp/naive_sync.hpp"

namespace microddp::ddp {

namespace {

using Params = std::vector<model::ParamInfo>;

std::unique_ptr<GradSync> make_naive(Strategy, comm::Communicator& comm, const Params& params, core::TensorView grads,
                                     core::EventLog& events, const GradSyncOptions&) {
  return std::make_unique<NaiveSync>(comm, params, grads, events);
}
std::unique_ptr<GradSync> make_flat(Strategy, comm::Communicator& comm, const Params& params, core::TensorView grads,
                                    core::EventLog& events, const GradSyncOptions&) {
  return std::make_unique<FlatSync>(comm, params, grads, events);
}
// Overlap is the bucketed machinery with one bucket per parameter.
std::unique_ptr<GradSync> make_overlap(Strategy self, comm::Communicator& comm, const Params& params,
                                       core::TensorView grads, core::EventLog& events, const GradSyncOptions&) {
  return std::make_unique<BucketedSync>(self, plan_per_parameter(params), comm, params, grads, events);
}
std::unique_ptr<GradSync> make_bucketed(Strategy self, comm::Communicator& comm, const Params& params,
                                        core::TensorView grads, core::EventLog& events,
                                        const GradSyncOptions& options) {
  const BucketCaps caps = bucket_caps(options);
  return std::make_unique<BucketedSync>(self, plan_buckets(params, caps.cap_bytes, caps.first_cap_bytes), comm, params,
                                        grads, events);
}

// The production rows, at the indices of their constants (strategy.hpp).
const StrategyRow kProductionRows[] = {
    {"naive", "one blocking all-reduce per parameter after backward", false, Strategy::Naive, &make_naive, {}, {},
     nullptr, true},
    {"flat", "one blocking all-reduce of all gradients after backward", false, Strategy::Flat, &make_flat, {}, {},
     nullptr, true},
    {"overlap", "one async all-reduce per parameter, launched during backward", true, Strategy::Overlap, &make_overlap,
     {}, {}, nullptr, true},
    {"bucketed", "one async all-reduce per bucket (--bucket-mb), launched during backward", true, Strategy::Bucketed,
     &make_bucketed, {}, {}, nullptr, true},
};

// A deque: registering a row never moves the others (strategy_row hands out references).
std::deque<StrategyRow>& table() {
  static std::deque<StrategyRow> rows = [] {
    std::deque<StrategyRow> r(std::begin(kProductionRows), std::end(kProductionRows));
    for (std::size_t i = 0; i < r.size(); ++i) {
      MDDP_CHECK(r[i].modelled_as.index() == i, "production strategy row " << r[i].name << " is not at its index");
    }
    return r;
  }();
  return rows;
}

}  // namespace

Strategy register_strategy(const StrategyRow& row) {
  auto& rows = table();
  for (const StrategyRow& r : rows) MDDP_CHECK(r.name != row.name, "strategy '" << row.name << "' registered twice");
  MDDP_CHECK(row.make != nullptr, "strategy '" << row.name << "' has no maker");
  MDDP_CHECK(row.modelled_as.index() < std::size(kProductionRows),
             "strategy '" << row.name << "' must be modelled as a production strategy");
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
bool is_async(Strategy s) { return strategy_row(s).async; }
Strategy modelled_as(Strategy s) { return strategy_row(s).modelled_as; }

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
