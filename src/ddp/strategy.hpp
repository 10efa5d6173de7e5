// strategy.hpp — the gradient-synchronisation strategies as ONE table. A strategy is data: a row
// holds its name, one line of help, its BUCKET PLAN (which slices of the flat gradient buffer its
// collectives carry, in launch order) and its LAUNCH RULE (all-reduced after backward, or each
// bucket launched during backward the moment its last gradient is ready). One synchroniser,
// PlannedSync (ddp/planned_sync.hpp), runs any (plan, launch) pair; every layer reads the same row:
// ddp builds the sync from it, ZeRO shards along its plan, perf models its plan and launch rule,
// bench ddp and analyze read whether its plan takes the bucket caps. Nobody switches on a name.
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
// Adding a strategy: one plan function and one row in kProductionRows (strategy.cpp), and a
// constant here at the row's index (docs/design.md, "Adding a strategy").
// Contract: rows are added before any thread reads the table (start-up); a registered name must be
// new; a row's strings outlive the program (literals); a plan covers every parameter, in order.
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
#include "ddp/bucket_planner.hpp"
#include "ddp/grad_sync_options.hpp"
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

// When a strategy's collectives are launched.
enum class Launch : std::uint8_t {
  // Blocking all-reduces of the plan's buckets, in plan order, once backward is done (on a
  // stream-ordered communicator: queued, and the compute stream waits for them).
  AfterBackward,
  // Each bucket's async all-reduce launched from backward's grad_ready the moment its last gradient
  // is ready, strictly in bucket order (a bucket complete early waits for the lower ones); they may
  // overlap backward and run on the communication thread.
  DuringBackward,
};

// The strategy's bucket plan over the flat gradient buffer [0, flat_count) (alignment padding
// included; its trailing padding is the flat buffer's): contiguous buckets in gradient-ready order
// covering every parameter (ddp/bucket_planner.hpp). `options`: --bucket-mb and --first-bucket-mb
// (a plan that reads them says so in its row). Every rank computes the same plan.
using BucketPlan = std::vector<Bucket> (*)(const std::vector<model::ParamInfo>& params, std::int64_t flat_count,
                                           const GradSyncOptions& options);
// Builds a synchroniser of the strategy's own (`self`: the strategy being built, for
// GradSync::strategy()): a course lab whose step runs its student's code.
using GradSyncMaker = std::unique_ptr<GradSync> (*)(Strategy self, comm::Communicator& comm,
                                                    const std::vector<model::ParamInfo>& params, core::TensorView grads,
                                                    core::EventLog& events, const GradSyncOptions& options);
// Builds the optimizer update of a strategy that brings its own (ddp/optimizer_update.hpp): `sync` is
// the GradSync its row's `make` built, which feeds it (a sharded update steps what its sync reduced).
using UpdateMaker = std::unique_ptr<OptimizerUpdate> (*)(GradSync& sync, model::FullMLP& model, kernels::Ops& ops,
                                                         const model::OptimizerConfig& config,
                                                         comm::Communicator& comm);

// A row, written with designated initializers: { .name = ..., .plan = ..., .launch = ..., ... }.
struct StrategyRow {
  std::string_view name;         // --strategy NAME; the spelling in checkpoints, run records, messages
  std::string_view description;  // one line on what it does, for help text
  BucketPlan plan = nullptr;     // the collectives it issues (the only plan anyone reads)
  Launch launch = Launch::AfterBackward;
  // Its plan reads --bucket-mb / --first-bucket-mb: bench ddp sweeps the cap, analyze and the run
  // record carry it, the step model reports it.
  bool reads_bucket_caps = false;
  // Why its step cannot be captured into a CUDA graph (ddp/step_graph.hpp), in a few words after
  // "--strategy NAME"; empty: it can (every host call of its step is one a replay redoes without the
  // host: asynchronous collectives on a stream-ordered communicator). A row whose step runs other
  // host code (a lab's student code) says so.
  std::string_view graph_obstacle = "runs host code in every step";
  // Why it cannot be combined with --shard ("--strategy NAME (<this>) does not shard"); empty: it can.
  std::string_view no_shard = {};
  // Why it cannot carry compressed gradients ("--strategy NAME (<this>) with --grad-compression ... is
  // not supported"); empty: it can.
  std::string_view no_compression = {};
  // A synchroniser of its own (a course lab); nullptr: PlannedSync runs `plan` with `launch`.
  GradSyncMaker make = nullptr;
  // Its own optimizer update (under --shard none; a row with one sets no_shard): nullptr = the
  // replicated update every rank runs over the whole flat buffer (ddp/sync_and_update.hpp).
  UpdateMaker make_update = nullptr;
};

// The production plans, for rows that issue a production strategy's collectives (the labs).
// naive, overlap: one bucket per parameter.
std::vector<Bucket> per_parameter_buckets(const std::vector<model::ParamInfo>& params, std::int64_t flat_count,
                                          const GradSyncOptions& options);
// flat: one bucket, the whole flat buffer (trailing padding included).
std::vector<Bucket> one_bucket(const std::vector<model::ParamInfo>& params, std::int64_t flat_count,
                               const GradSyncOptions& options);
// bucketed: greedy buckets under --bucket-mb, the first under --first-bucket-mb (bucket_caps).
std::vector<Bucket> capped_buckets(const std::vector<model::ParamInfo>& params, std::int64_t flat_count,
                                   const GradSyncOptions& options);

// Appends a row (a name not in the table yet, `plan` set) and returns its strategy.
Strategy register_strategy(const StrategyRow& row);
const StrategyRow& strategy_row(Strategy s);
// Every strategy of the table, in table order (production, then registered).
std::vector<Strategy> all_strategies();

std::string_view strategy_name(Strategy s);
// One line on what the strategy does, for help text.
std::string_view strategy_description(Strategy s);
// Its collectives run during backward (the row's launch rule).
bool is_async(Strategy s);
// The strategy's bucket plan (its row's), the one its sync, ZeRO and the step model use.
std::vector<Bucket> strategy_plan(Strategy s, const std::vector<model::ParamInfo>& params, std::int64_t flat_count,
                                  const GradSyncOptions& options);

// `what` names the source in the error, e.g. "--strategy" or "run record".
Strategy parse_strategy(std::string_view name, std::string_view what = "strategy");
// "naive, flat, overlap, bucketed, ...": every row's name, as errors and help text list them.
std::string strategy_choices();

}  // namespace microddp::ddp
