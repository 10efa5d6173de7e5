// grad_sync.hpp — the gradient-synchronisation strategy interface (ddp/strategy.hpp names them).
//
// Lifecycle of one optimizer step, driven by the trainer:
//   on_backward_begin(step)      before backward of a micro-step that must synchronise
//   on_grad_ready(param)         from inside backward, in gradient-ready order, every parameter
//   finish()                     after backward; returns when the gradient buffer holds the SUM of
//                                all ranks' gradients (loss is normalised by the global batch, so
//                                the sum is the exact global-batch gradient) — or, on a
//                                stream-ordered communicator (NCCL with gradients on the GPU), when
//                                the compute stream is ordered after the collectives: work queued on
//                                it later sees the summed gradient, and the host has not waited
//   complete(backward_end_ns)    after the caller synchronised the compute stream: records the
//                                events finish() could not time yet (stream-ordered case only)
// Contract: every rank issues the same collectives in the same order (they are driven by the
// fixed gradient-ready order); a parameter that never reported ready is detected in finish() and
// reported as an error instead of leaving other ranks hanging. Each collective is recorded in the
// event log twice (record_collective): kind Collective, launch -> completion, bytes; and kind
// CollectiveExec, start of execution -> completion. The time finish() blocks is recorded as
// CommWait, so step statistics and traces come from the same events.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"
#include "core/event_log.hpp"
#include "ddp/compression/grad_compressor.hpp"
#include "ddp/grad_sync_options.hpp"
#include "ddp/strategy.hpp"
#include "model/mlp.hpp"

namespace microddp::ddp {

// One collective of a strategy's step: gradient slice [offset, offset + count) holding parameters
// [first_param, end_param): a bucket of its plan (naive, overlap: one per parameter; flat: one for all).
struct SyncUnit {
  std::int64_t offset = 0, count = 0;
  int first_param = 0, end_param = 0;
};

class GradSync {
 public:
  // `grads`: the whole flat gradient buffer (host or device memory; its device goes to every collective).
  GradSync(comm::Communicator& comm, const std::vector<model::ParamInfo>& params, core::TensorView grads,
           core::EventLog& events);
  virtual ~GradSync() = default;
  virtual Strategy strategy() const = 0;
  // The strategy's name; a sharded sync adds its shard mode ("bucketed+shard=optimizer").
  virtual std::string_view name() const { return strategy_name(strategy()); }

  virtual void on_backward_begin(std::int64_t step);
  virtual void on_grad_ready(const model::ParamInfo& param);
  virtual void finish() = 0;
  // Stream-ordered case only (otherwise a no-op): after the compute stream was synchronised,
  // records each deferred collective (launch -> completion on the host clock) and the exposed
  // communication as CommWait from `backward_end_ns` (when backward ended on the device) to the last
  // completion, then waits the Works (already complete: this surfaces errors without blocking).
  void complete(std::int64_t backward_end_ns);
  // After a step's calls were captured into a CUDA graph (ddp/step_graph.hpp) instead of complete():
  // its deferred collectives were recorded, not run, and have nothing to time or wait.
  void discard_deferred() { deferred_.clear(); }

  // What one synchronising step costs: number of gradient collectives and bytes all-reduced (with
  // compression: the compressed payload of the step last begun, see grad_compressor.hpp).
  virtual std::int64_t collectives_per_step() const = 0;
  std::int64_t bytes_per_step() const;
  // The same without compression: the fp32 bytes of the strategy's collectives.
  std::int64_t uncompressed_bytes_per_step() const { return synced_count_ * model::kParamElementBytes; }
  // The strategy's collectives of one step, in launch order.
  virtual std::vector<SyncUnit> units() const = 0;

  // Gradient compression (ddp/compression): every unit then travels encode -> collective(s) ->
  // decode through `c` (nullptr: plain fp32 all-reduce). Call once, before the first step. The
  // stream-ordered shortcut is off with a compressor (its second phase needs the first's result).
  void attach_compressor(std::unique_ptr<GradCompressor> c);
  GradCompressor* compressor() const { return compressor_.get(); }
  // Host nanoseconds of compression work in the step last synchronised (0 without a compressor).
  std::int64_t compression_ns() const { return compressor_ ? compressor_->encode_ns() : 0; }
  // Human-readable name of the collective with event id `id` (parameter, bucket, "all gradients").
  virtual std::string collective_label(int id) const;

 protected:
  // Throws if some parameter did not report ready during this backward.
  void check_all_ready() const;
  // True when the host must not wait for the gradient collectives (see finish()).
  bool stream_ordered() const { return stream_ordered_; }
  // Stream-ordered case: a collective whose events complete() records.
  void defer(const comm::Work& work, std::int32_t id, std::int64_t launch_ns, std::int64_t bytes);
  // Stream-ordered case: the compute stream waits (on the device) for every deferred collective.
  void order_compute_after_deferred();
  core::TensorView grad_slice(std::int64_t offset, std::int64_t count) const;
  // Records collective `id` of this step: Collective [launch, done] and CollectiveExec [start, done].
  // start_ns 0 (unknown: a synchronous call returns a Work without timestamps) counts as the launch:
  // a synchronous call with nothing queued runs at once on the caller's thread (progress_engine.hpp),
  // and every strategy that issues synchronous calls has nothing queued. start is clamped into
  // [launch, done] (a stream backend's device-clock conversion can be off by microseconds).
  // step >= 0: record under that step instead of this sync's (ZeRO's gathers, waited in the next step).
  void record_collective(std::int32_t id, std::int64_t launch_ns, std::int64_t start_ns, std::int64_t done_ns,
                         std::int64_t bytes, std::int64_t step = -1);
  // Unit u (index into units()): its all-reduce, or the compressor's first phase; complete_unit()
  // after that Work completed (the compressor's second phase and decode; nothing without one).
  comm::Work launch_unit(int u, comm::Mode mode);
  void complete_unit(int u);
  // Bytes unit u puts on the wire this step (compressed or fp32).
  std::int64_t unit_bytes(int u) const;

  comm::Communicator& comm_;
  const std::vector<model::ParamInfo>& params_;
  core::TensorView grads_;
  core::EventLog& events_;
  std::int64_t step_ = 0;
  std::vector<char> ready_;        // per parameter, reset at on_backward_begin
  std::int64_t total_count_ = 0;   // elements of the flat gradient buffer (parameters + alignment padding)
  std::int64_t synced_count_ = 0;  // elements all-reduced per step (set by each strategy; default: all)

 private:
  struct Deferred {
    comm::Work work;
    std::int32_t id = 0;
    std::int64_t launch_ns = 0, bytes = 0;
  };
  bool stream_ordered_ = false;
  std::unique_ptr<GradCompressor> compressor_;
  std::vector<SyncUnit> units_;     // units(), cached by attach_compressor()
  std::vector<Deferred> deferred_;  // capacity reserved at construction (no allocation per step)
};

// Builds the strategy's synchroniser (strategy.hpp): a PlannedSync running its row's plan with its
// launch rule, or its row's own maker; a non-positive bucket cap for `bucketed` is a UsageError.
std::unique_ptr<GradSync> make_grad_sync(Strategy strategy, comm::Communicator& comm,
                                         const std::vector<model::ParamInfo>& params, core::TensorView grads,
                                         core::EventLog& events, const GradSyncOptions& options = {});
// The same with gradient compression (`ops`: the gradients' device; `seed`: PowerSGD's initial Q).
std::unique_ptr<GradSync> make_grad_sync(Strategy strategy, comm::Communicator& comm,
                                         const std::vector<model::ParamInfo>& params, core::TensorView grads,
                                         core::EventLog& events, const GradSyncOptions& options,
                                         const GradCompressionConfig& compression, kernels::Ops& ops,
                                         std::uint64_t seed);

}  // namespace microddp::ddp
