// strategy.hpp — the gradient-synchronisation strategies as ONE table: a row per strategy (its name,
// one line of help, whether it is async, which production strategy's collectives it issues, and the
// maker of its GradSync). Every layer asks the table: ddp builds a strategy with its row's maker,
// perf models it and the shard planner plans it as its row's `modelled_as`, app parses and lists
// the rows.
//
// How a strategy is identified: `Strategy` is a small value, the index of its row. The production
// rows come first, at fixed indices, named by constants (Strategy::Naive, ::Flat, ::Overlap,
// ::Bucketed, in the order help text, benchmarks and the analysis present them: cheapest idea
// first; kStrategies lists them). Further rows are added at start-up by register_strategy (the
// course's labs, src/labs, register theirs from app/main.cpp) and get the next indices in
// registration order, so an index is only meaningful inside one process: everything that leaves it
// (TrainConfig's field table and fingerprint codes, run records, checkpoints, messages) carries the
// row's name, and parse_strategy reads it back. strategy_name() and parse_strategy() are inverse; a
// name that is not a row is a core::UsageError naming the option it came from and listing the rows.
//
// Adding a strategy: its GradSync in its own file(s), one row in kProductionRows (strategy.cpp), and
// a constant here at the row's index (docs/design.md, "Adding a strategy").
// Contract: rows are added before any thread reads the table (start-up); a registered name must be
// new; a row's strings outlive the program (literals).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"
#include "core/event_log.hpp"
#include "core/tensor_view.hpp"
#include "model/param_layout.hpp"

namespace microddp::kernels {
class Ops;
}
namespace microddp::model {
class FullMLP;
struct OptimizerConfig;
}  // namespace microddp::model

namespace microddp::ddp {

class GradSync;
class OptimizerUpdate;
struct GradSyncOptions;
struct StrategyRow;

class Strategy {
 public:
  // The production strategies (their rows: strategy.cpp).
  static const Strategy Naive;    // one blocking all-reduce per parameter after backward
  static const Strategy Flat;     // one blocking all-reduce of the whole flat gradient buffer after backward
  static const Strategy Overlap;  // one async all-reduce per parameter, launched during backward when it is ready
  static const Strategy
      Bucketed;  // one async all-reduce per bucket (--bucket-mb), launched when its last gradient is ready

  constexpr Strategy() = default;  // Naive
  constexpr bool operator==(const Strategy&) const = default;
  // The row's position in the table (production rows first).
  constexpr std::size_t index() const { return index_; }

 private:
  explicit constexpr Strategy(std::size_t index) : index_(index) {}
  friend Strategy register_strategy(const StrategyRow& row);
  friend std::vector<Strategy> all_strategies();
  std::size_t index_ = 0;
};
inline constexpr Strategy Strategy::Naive{0};
inline constexpr Strategy Strategy::Flat{1};
inline constexpr Strategy Strategy::Overlap{2};
inline constexpr Strategy Strategy::Bucketed{3};

// The production strategies, in table order.
inline constexpr std::array<Strategy, 4> kStrategies = {Strategy::Naive, Strategy::Flat, Strategy::Overlap,
                                                        Strategy::Bucketed};

// Builds the strategy's synchroniser (`self`: the strategy being built, for GradSync::strategy()).
using GradSyncMaker = std::unique_ptr<GradSync> (*)(Strategy self, comm::Communicator& comm,
                                                    const std::vector<model::ParamInfo>& params, core::TensorView grads,
                                                    core::EventLog& events, const GradSyncOptions& options);
// Builds the optimizer update of a strategy that brings its own (ddp/optimizer_update.hpp): `sync` is
// the GradSync its row's `make` built, which feeds it (a sharded update steps what its sync reduced).
using UpdateMaker = std::unique_ptr<OptimizerUpdate> (*)(GradSync& sync, model::FullMLP& model, kernels::Ops& ops,
                                                         const model::OptimizerConfig& config,
                                                         comm::Communicator& comm);

struct StrategyRow {
  std::string_view name;         // --strategy NAME; the spelling in checkpoints, run records, messages
  std::string_view description;  // one line on what it does, for help text
  // Its collectives are launched asynchronously during backward: they may overlap compute and run on
  // the communication thread; otherwise they are all-reduced after backward.
  bool async = false;
  // The production strategy whose collectives it issues (a production row: itself), for the
  // performance model, the analysis and the shard planner.
  Strategy modelled_as;
  GradSyncMaker make = nullptr;
  // Why it cannot be combined with --shard ("--strategy NAME (<this>) does not shard"); empty: it can.
  std::string_view no_shard = {};
  // Why it cannot carry compressed gradients ("--strategy NAME (<this>) with --grad-compression ... is
  // not supported"); empty: it can.
  std::string_view no_compression = {};
  // Its own optimizer update (under --shard none; a row with one sets no_shard): nullptr = the
  // replicated update every rank runs over the whole flat buffer (ddp/sync_and_update.hpp).
  UpdateMaker make_update = nullptr;
  // Whether its step may be captured into a CUDA graph (ddp/step_graph.hpp): every host call it makes
  // in a step must be one a replay can redo without the host (asynchronous collectives on a
  // stream-ordered communicator). Off unless a row says so: a lab row runs a student's host code.
  bool graphable = false;
};

// Appends a row (a name not in the table yet, `make` set, `modelled_as` a production strategy) and
// returns its strategy.
Strategy register_strategy(const StrategyRow& row);
const StrategyRow& strategy_row(Strategy s);
// Every strategy of the table, in table order (production, then registered).
std::vector<Strategy> all_strategies();

std::string_view strategy_name(Strategy s);
// One line on what the strategy does, for help text.
std::string_view strategy_description(Strategy s);
// The row's `async`.
bool is_async(Strategy s);
// The row's `modelled_as`.
Strategy modelled_as(Strategy s);

// `what` names the source in the error, e.g. "--strategy" or "run record".
Strategy parse_strategy(std::string_view name, std::string_view what = "strategy");
// "naive, flat, overlap, bucketed, ...": every row's name, as errors and help text list them.
std::string strategy_choices();

}  // namespace microddp::ddp
