// zero_sync.hpp — sharded data parallelism (ZeRO stages 1 and 2) as a gradient-sync strategy.
//
// Per step, on top of the bucket plan (shard_plan.hpp says how shards sit in buckets):
//   backward     each bucket, the moment its last gradient is ready (strictly in bucket order, like
//                PlannedSync), launches an async REDUCE-SCATTER of its world*chunk elements and, if
//                the bucket has a tail, an async all-reduce of the tail;
//   finish()     waits for them: rank r now holds the summed gradient of its chunks (and every tail);
//   update       the trainer steps the optimizer over segments() only (this rank's chunks + tails)
//                and, bucket by bucket in REVERSE bucket order (the last bucket holds layer 0,
//                which the next forward needs first), launch_gather(b) starts the ALL-GATHER of the
//                updated chunks while the optimizer computes the next bucket;
//   next forward the step ends with the gathers in flight: before each layer's forward,
//                await_layer() waits for the gathers of that layer's buckets only, so layer l's
//                forward runs while the gathers of layers > l are still moving. Anything else
//                that reads the parameters first calls wait_gather() (the trainer does).
// Reduce-scatter + all-gather move exactly what one all-reduce moves (a ring all-reduce IS a
// reduce-scatter followed by an all-gather), so sharding costs no extra communication volume.
//
// Where the reduced gradient shard lands:
//   optimizer (ZeRO-1)  in place, in the first `chunk` elements of the bucket's slice of the flat
//                       gradient buffer (the communicator's in-place reduce-scatter convention);
//                       the tail in place too. No gradient memory beyond DDP's.
//   gradients (ZeRO-2)  out of place, into a shard-sized reduced-gradient buffer laid out like the
//                       optimizer state; the optimizer, clipping and the NaN checks read only that.
//                       With a gradient pool (one micro-step per step), backward never sees the flat
//                       gradient buffer at all: the model is given this ZeroSync as its
//                       GradPlacement and writes each bucket's gradients into one of kPoolSlots
//                       bucket-sized slots; a slot is reused by bucket b + kPoolSlots once bucket
//                       b's reduce-scatter has completed (acquire() waits for that, or orders the
//                       compute stream after it). Gradient memory per rank is then the shard plus
//                       kPoolSlots buckets, whatever the model size. With gradient accumulation the
//                       micro-steps accumulate into the flat buffer (see docs/zero.md for why).
// Contract: every rank issues the same collectives in the same order (fixed plan, bucket order);
// launching allocates nothing; buffers stay untouched until the Works complete (finish() and
// wait_gather() wait, or order the compute stream after them on a stream-ordered communicator).
#pragma once

#include <string>
#include <vector>

#include "ddp/grad_sync.hpp"
#include "ddp/zero/shard_plan.hpp"
#include "kernels/ops_buffer.hpp"
#include "model/mlp.hpp"

namespace microddp::ddp::zero {

// One contiguous run of this rank's shard: parameters [param_offset, +count) of the flat buffers,
// their reduced gradient at `grad`, their optimizer state at [state_offset, +count) of the shard
// buffers. in_norm: counts toward the global gradient norm on this rank (tails are replicated, so
// only rank 0 counts them).
struct ShardSegment {
  std::int64_t param_offset = 0;
  float* grad = nullptr;  // device() memory
  std::int64_t state_offset = 0;
  std::int64_t count = 0;
  bool in_norm = true;
};

class ZeroSync final : public GradSync, public model::GradPlacement {
 public:
  // Bucket slots of the gradient pool: two, so backward fills one while the other's reduce-scatter
  // runs (one would serialise backward behind every reduce-scatter).
  static constexpr int kPoolSlots = 2;
  // grads / params: the model's whole flat gradient and parameter buffers. grad_pool (gradients mode
  // only): backward writes through this object's acquire() (set it as the model's GradPlacement),
  // and `grads` is used for its device and size only (the model frees it).
  ZeroSync(ShardMode mode, Strategy base_strategy, ShardPlan plan, comm::Communicator& comm,
           const std::vector<model::ParamInfo>& params, core::TensorView grads, core::TensorView param_view,
           kernels::Ops& ops, core::EventLog& events, bool grad_pool = false);
  // GradPlacement (grad_pool only): where backward writes `param`'s gradient. The first parameter
  // of bucket b takes slot b % pool_slots, first waiting for the reduce-scatter of the bucket that
  // used it before and zeroing the slot's alignment padding (backward never writes it, and the
  // reduce-scatter sums it).
  float* acquire(const model::ParamInfo& param) override;
  bool grad_pool() const { return pool_.count() > 0; }
  // Elements of the gradient pool for `plan`: min(kPoolSlots, buckets) slots of the largest bucket's
  // widened slice (with a single bucket, one slot: it is never recycled).
  static int pool_slots(const ShardPlan& plan);
  static std::int64_t pool_count(const ShardPlan& plan);
  // The strategy whose buckets the shards follow.
  Strategy strategy() const override { return base_strategy_; }
  std::string_view name() const override { return name_; }
  void on_backward_begin(std::int64_t step) override;
  void on_grad_ready(const model::ParamInfo& param) override;
  void finish() override;
  // Reduce-scatters and tail all-reduces, plus the all-gathers of the update.
  std::int64_t collectives_per_step() const override;
  std::string collective_label(int id) const override;
  // One unit per shard bucket (its widened slice): what the reduce-scatters cover.
  std::vector<SyncUnit> units() const override;

  ShardMode mode() const { return mode_; }
  const ShardPlan& plan() const { return plan_; }
  // This rank's segments, bucket by bucket (segments_of(b) = [first, end) indices).
  const std::vector<ShardSegment>& segments() const { return segments_; }
  std::pair<std::size_t, std::size_t> segments_of(std::size_t b) const { return {seg_begin_[b], seg_begin_[b + 1]}; }
  // Starts the all-gather of bucket b's updated chunks (call in REVERSE bucket order, last bucket
  // first, each after updating its segments).
  void launch_gather(std::size_t b);
  // True from the first launch_gather() of an update until every gather was waited for.
  bool gather_pending() const { return gathers_waited_ < gathers_launched_; }
  // Before layer `layer`'s forward: waits (host) or orders the compute stream (stream-ordered) for
  // the gathers of the buckets holding that layer's parameters. Host waits are recorded as
  // CommWait events of `step` and kept in forward_waits() (the trainer cuts them out of Forward).
  void await_layer(int layer, std::int64_t step);
  // Every gather not waited for yet (events recorded under `step`).
  void wait_gather(std::int64_t step);
  // Host intervals [begin, end) await_layer() waited in since the last clear_forward_waits().
  const std::vector<std::pair<std::int64_t, std::int64_t>>& forward_waits() const { return forward_waits_; }
  void clear_forward_waits() { forward_waits_.clear(); }
  // End of every step, updated or skipped (optimizer mode only; otherwise nothing): zeroes the
  // in-place reduce-scatter's results. They may have landed on the alignment padding between
  // parameters, which backward never writes and which must stay zero (param_layout.hpp), or the
  // next reduce-scatter would sum stale values into it.
  void end_step(kernels::Ops& ops);
  // Bytes per step: into the reduce-scatters and tail all-reduces (counted like an all-reduce's
  // input, GradSync::bytes_per_step), and gathered by the all-gathers (the output count).
  std::int64_t gather_bytes_per_step() const;
  // Bytes of buffers this strategy allocated: the ZeRO-2 reduced-gradient shard, and the gradient
  // pool's slots (communication buffers: backward's gradients wait there for their reduce-scatter).
  std::int64_t reduced_grad_bytes() const { return store_.count() * static_cast<std::int64_t>(sizeof(float)); }
  std::int64_t pool_bytes() const { return pool_.count() * static_cast<std::int64_t>(sizeof(float)); }

 private:
  void launch(std::size_t b);
  // Waits for (or orders the compute stream after) bucket b's gather; records its events.
  void wait_gather_of(std::size_t b, std::int64_t step, bool in_forward);
  // Where bucket b's widened slice sits: in its pool slot, or in the flat gradient buffer.
  core::TensorView bucket_grads(std::size_t b);
  // Waits (host) or orders the compute stream (stream-ordered) until bucket b's collectives are done.
  void wait_bucket(std::size_t b);

  kernels::Ops& ops_;
  ShardMode mode_;
  Strategy base_strategy_;
  std::string name_;
  ShardPlan plan_;
  core::TensorView params_view_;
  kernels::OpsBuffer<float> store_;  // gradients mode: this rank's reduced gradient [chunks | tails]
  std::vector<ShardSegment> segments_;
  std::vector<std::size_t> seg_begin_;  // per bucket, + end
  std::vector<int> bucket_of_;
  std::vector<int> pending_;
  std::vector<comm::Work> rs_work_, tail_work_, ag_work_;  // per bucket
  std::vector<std::int64_t> rs_launch_ns_, ag_launch_ns_;
  std::size_t next_launch_ = 0;
  std::size_t gathers_launched_ = 0;
  // Gradient pool: pool_slots_ slots of slot_count_ elements; per bucket, the [begin, end) ranges of
  // its widened slice that no parameter covers (alignment padding), relative to the slice.
  // Gathers: which buckets hold each layer's parameters; which gathers were waited for.
  std::vector<std::vector<std::size_t>> layer_buckets_;
  std::vector<char> gathered_;      // per bucket: this update's gather waited for (or none launched)
  std::size_t gathers_waited_ = 0;  // of this update's gathers_launched_; both 0 again once all are waited
  std::vector<std::pair<std::int64_t, std::int64_t>> forward_waits_;
  kernels::OpsBuffer<float> pool_;
  int pool_slots_ = 0;
  std::int64_t slot_count_ = 0;
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> padding_;
};

}  // namespace microddp::ddp::zero
