// lab_zero1.hpp — the seam of lab 09 (docs/labs/09-zero1): `--strategy lab-zero1` runs the student's
// ZeRO stage 1 (lab_api.hpp: zero1_shard, zero1_reduce_gradients, zero1_update) inside the real
// trainer, as a gradient-sync strategy plus the optimizer update it feeds, the two halves
// production ZeRO has (ddp/zero/zero_sync.hpp, sharded_update.hpp):
//   start-up      zero1_shard(count, world, rank) — the optimizer state is sized from it (the
//                 shard's elements only: the memory ZeRO-1 saves); the program needs the one split
//                 its equal-block collectives allow, and refuses another with a UsageError
//   finish()      after backward: zero1_reduce_gradients (this rank's chunk of the summed gradient
//                 at grads[0, chunk), the summed tail in place)
//   the verdict   the program: the global sum of squares is the shards' (the tail counted on rank 0
//                 only), one all-reduce of a double, as ShardedUpdate computes it
//   apply(clip)   the program scales the shard's gradient by the clip factor and advances the
//                 optimizer's step count (bias corrections), then zero1_update (Adam on the shard
//                 through Zero1Context::adam_update, the all-gather of the parameters)
// Every collective the student makes is one blocking fp32 collective on the program's
// communicator, recorded in the event log (Collective, CollectiveExec; CommWait for finish()), so
// step tables and traces show them. Host gradients only (--device cpu): the student's code reads
// and writes them. The optimizer state is the shard's; host_state() assembles the full-size state
// for checkpoints (collective: one all-gather per state buffer), so a checkpoint of a lab run has
// the format of every other, and the divergence check compares the parameters only.
// The ZeRO view of the flat buffers stops at the end of the last parameter: the alignment padding
// after it carries nothing, and leaving it out keeps the remainder a student must handle real.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "ddp/grad_sync.hpp"
#include "ddp/optimizer_update.hpp"
#include "labs/lab_api.hpp"

namespace microddp::labs {

// The shard the program needs (the canonical split of lab_api.hpp's LabShard).
LabShard expected_zero1_shard(std::int64_t count, int world, int rank);

class LabZero1Sync final : public ddp::GradSync {
 public:
  // Calls the student's zero1_shard and checks it (a UsageError naming what the program needs).
  LabZero1Sync(comm::Communicator& comm, const std::vector<model::ParamInfo>& params, core::TensorView grads,
               core::EventLog& events);
  ddp::Strategy strategy() const override;  // `lab-zero1` (lab_strategies.hpp)
  void finish() override;
  std::int64_t collectives_per_step() const override;
  std::vector<ddp::SyncUnit> units() const override;  // one: the flat buffer, like `flat`
  std::string collective_label(int id) const override;

  // The context of the last step (the grader reads its shard and calls).
  const Zero1Context& context() const { return ctx_; }
  // The elements ZeRO shards: up to the end of the last parameter.
  std::int64_t zero_count() const { return static_cast<std::int64_t>(ctx_.grads_.size()); }

 private:
  friend class Zero1Context;
  friend class LabZero1Update;
  enum class Phase : std::uint8_t { Outside, Reduce, Update };
  // The update gives the parameters and the optimizer (before the first step).
  void attach(float* params, model::Optimizer& optimizer);
  // zero1_update, after the update began the optimizer's step.
  void run_update();
  void collective(Zero1Context::Kind kind, float* data, std::int64_t count);
  void adam_update(std::int64_t first, const float* grad, std::int64_t state_offset, std::int64_t count);
  // Whether [data, data + count) lies inside grads() or params().
  bool inside_buffers(const float* data, std::int64_t count) const;

  Zero1Context ctx_;
  model::Optimizer* optimizer_ = nullptr;
  Phase phase_ = Phase::Outside;
};

class LabZero1Update final : public ddp::OptimizerUpdate {
 public:
  // `sync` (the GradSync of a lab-zero1 row) must outlive it.
  LabZero1Update(model::FullMLP& model, kernels::Ops& ops, const model::OptimizerConfig& config,
                 comm::Communicator& comm, LabZero1Sync& sync);

  void grad_sum_squares_to(double* out) override;
  void poison_gradient() override;
  void apply(double clip) override;

  const HostState& host_state() const override;
  void state_to_host() const override;
  void state_from_host() override;
  const HostState& checked_state() const override { return params_only_; }
  void checked_state_to_host() const override { params_to_host(); }

 private:
  float* chunk_grad() const;  // this rank's summed chunk: grads[0, chunk_count)
  float* tail_grad() const;   // the summed tail, in place
  comm::Communicator& comm_;
  LabZero1Sync& sync_;
  HostState params_only_;   // the divergence check's view
  mutable HostState full_;  // host_state(): params + full-size optimizer state (full_state_)
};

// A shard in words ("chunk [b, e) and tail [b, e)"), and shard equality: for the program's messages
// and the grader's.
std::string shard_text(const LabShard& s);
bool same_shard(const LabShard& a, const LabShard& b);

}  // namespace microddp::labs
