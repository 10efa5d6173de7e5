// prefetching_input.hpp — the input pipeline with a loader thread: the next batches are filled
// while the current step computes, so the step waits for its input only when the loader falls
// behind (ddp/input_pipeline.hpp says what a pipeline provides; docs/design.md, invariants).
//
// `depth` slots (host buffers of max_local_count rows x in_dim floats plus labels; pinned on a
// GPU) are allocated once. A data::BatchPrefetcher fills batch b into slot b % depth on its loader
// thread with the rows ddp/batch_rows.hpp gives — the same rows DirectInput fills on the step's
// thread, so training is bitwise the same with either (tests/ddp/test_prefetching_input.cpp).
// load(b) takes the slot (the time it blocks is the step's exposed data time) and moves it into the
// model's input and labels with Ops::upload_async, then wait_for_upload:
//   CPU  the upload is a copy made at once: the slot is released before load() returns.
//   GPU  the copy runs on the copy stream and the compute stream waits for its event (the host
//        never waits); the slot is released at the next load(), after the step's synchronisation
//        has waited for the compute stream and so for the copy.
// Contract:
//   * The loader starts at the first load(b), at batch b (a resumed run starts at a later batch);
//     set_source() and set_epochs() come before it. Loads are consecutive (b, b+1, ...): anything
//     else is a programming error (core::Error). restart() stops the loader; the next load() starts
//     it again at the batch it names.
//   * The source's fill must be safe off the step's thread (DataSource::prepare_fill_off_thread);
//     the trainer uses DirectInput otherwise (make_input_pipeline, ddp/input_pipeline.hpp).
//   * GPU: the caller synchronises the compute stream between two load()s (the trainer with one
//     micro-step per step: the numerics verdict); with accumulation it would not, so the trainer
//     keeps DirectInput there.
//   * An exception thrown by the fill on the loader thread is rethrown by the load() of that batch.
//   * Nothing allocates after construction; the destructor stops the loader.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/batch_prefetcher.hpp"
#include "ddp/batch_rows.hpp"
#include "ddp/input_pipeline.hpp"
#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"
#include "model/param_layout.hpp"

namespace microddp::ddp {

class PrefetchingInput final : public InputPipeline {
 public:
  // Batches prepared ahead at most (the CLI's --prefetch range): more slots only cost memory once
  // the loader keeps up.
  static constexpr int kMaxDepth = 16;

  // model_input: the model's input buffer (device memory), max_local_count(global_batch) rows of
  // in_dim. depth in [1, kMaxDepth].
  PrefetchingInput(kernels::Ops& ops, const model::MlpConfig& model, std::uint64_t seed, std::int64_t global_batch,
                   int rank, int world, float* model_input, int depth = 2);
  ~PrefetchingInput() override;
  PrefetchingInput(const PrefetchingInput&) = delete;
  PrefetchingInput& operator=(const PrefetchingInput&) = delete;

  void load(std::int64_t batch, bool nan_input) override;
  const std::int32_t* labels() const override { return labels_.data(); }
  const data::Sampler& sampler() const override { return rows_.sampler(); }
  void set_source(const data::DataSource& source) override;
  const data::DataSource& source() const override { return rows_.source(); }
  void set_epochs(const data::EpochSampler& epochs, std::int64_t accum_steps) override;
  std::string describe() const override { return rows_.describe(); }
  BackgroundWork background() const override;
  void restart() override;

 private:
  void fill_slot(std::int64_t batch, int slot);  // on the loader thread
  void stop();                                   // the loader stopped, no slot in use

  kernels::Ops& ops_;
  int depth_;
  BatchRows rows_;
  std::vector<std::int64_t> row_scratch_;                     // the loader's: source rows of an epoch's batch
  std::vector<kernels::OpsHostBuffer<float>> slot_x_;         // depth x (max rows, in_dim)
  std::vector<kernels::OpsHostBuffer<std::int32_t>> slot_y_;  // depth x (max rows)
  float* model_input_;
  kernels::OpsBuffer<std::int32_t> labels_;  // the loaded batch's labels (device memory)
  std::int64_t next_batch_ = -1;             // the batch the next load() must name (-1: any, first)
  std::int64_t held_ = -1;                   // GPU: the batch whose slot the last upload read
  std::atomic<std::int64_t> batches_filled_{0};
  std::int64_t background_ns_ = 0;                     // of loaders stopped by restart()
  std::unique_ptr<data::BatchPrefetcher> prefetcher_;  // last: its loader stops before the rest goes
};

}  // namespace microddp::ddp
