// train_state.hpp — what a checkpoint saves and restores of a training run, and nothing else: the
// narrow view ddp::Trainer gives io/ (checkpoint save and resume, the compression state), so the
// checkpoint code depends on this interface instead of on the training step.
//
// What it is: the configuration, the progress (steps done, the data position, the optimizer's step
// count), the data source's description, the host view of parameters and optimizer state, and the
// gradient compressor whose state rides along.
//
// Contract:
//   * host_state() is a host view in the flat parameter layout: with CpuOps the live buffers, on a
//     GPU a host mirror. Its optimizer state is always FULL size, also when each rank holds only a
//     shard (--shard): checkpoints keep one world-size-independent format.
//   * state_to_host() refreshes the view (collective when sharded: it all-gathers the shards);
//     state_from_host() uploads it (sharded: this rank's shard of it). Both between steps only.
//   * restore_progress() continues after a load: at `steps_done` with the optimizer's step count
//     `optimizer_steps` (they differ when updates were skipped); collective, it verifies that every
//     rank now holds the same parameters and optimizer state (core::AgreedError otherwise).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/data_source.hpp"
#include "ddp/compression/grad_compressor.hpp"
#include "ddp/train_config.hpp"
#include "model/optimizer.hpp"

namespace microddp::ddp {

class TrainState {
 public:
  struct HostState {
    float* params = nullptr;                               // param_count floats
    std::int64_t param_count = 0;                          // elements of the flat parameter buffer
    std::vector<model::Optimizer::StateBuffer> optimizer;  // same names and counts as the optimizer's
  };

  virtual const TrainConfig& config() const = 0;
  virtual std::int64_t steps_done() const = 0;
  // Global index of the next sample the run will read (world-size independent).
  virtual std::int64_t data_position() const = 0;
  virtual const data::DataSource& data_source() const = 0;
  // The data source and how the run reads it (InputPipeline::describe): what a checkpoint records.
  virtual std::string data_description() const = 0;
  virtual std::int64_t optimizer_steps() const = 0;
  // The run's gradient compressor (its state is checkpointed), or nullptr.
  virtual GradCompressor* compressor() const = 0;

  virtual const HostState& host_state() const = 0;
  virtual void state_to_host() const = 0;
  virtual void state_from_host() = 0;
  virtual void restore_progress(std::int64_t steps_done, std::int64_t optimizer_steps) = 0;

 protected:
  ~TrainState() = default;  // not owned through this view
};

}  // namespace microddp::ddp
