// input_pipeline.hpp — where the batch comes from: the data phase of a training step, behind one
// small interface so the step does not know how its input is prepared.
//
// load(b) makes global batch b (micro-batch b = step * accum_steps + k; world-size independent, see
// data::Sampler) the model's input: this rank's rows() rows in the model's input buffer and their
// labels at labels(), both memory of the Ops's device. On a GPU load() need not wait for the copies:
// it orders the compute stream after them, so the forward and backward queued after load() see them.
//
// Implementations, and which one a run gets (make_input_pipeline below):
//   PrefetchingInput (ddp/prefetching_input.hpp)  the default (--prefetch N, N >= 1): a loader
//       thread prepares the next N batches into pinned buffers while the step computes; on a GPU
//       they travel on a copy stream and the compute stream waits for an event. The time load()
//       blocks is the step's Data event, its exposed input time; the loader's fill time is
//       prepared in the background (background()).
//   DirectInput (ddp/direct_input.hpp)  fills the batch on the step's thread when the step asks
//       (into pinned staging on a GPU, then one upload). Used with --prefetch 0; for the synthetic
//       set on a GPU (its rows are made there by a kernel: nothing to prepare on the host); for a
//       source whose fill must stay on the step's thread (an HDF5 file too large to hold in memory:
//       HDF5 here is not thread-safe, io/hdf5_data_source.hpp); and on a GPU with accumulation
//       (no synchronisation between micro-steps tells when an upload's slot is free again).
// Both read the source through ddp/batch_rows.hpp: the same rows, bit for bit.
// Contract: batches are loaded in increasing order, one at a time (consecutive ones until
// restart(): a resume that jumps to another step restarts the pipeline there); load() allocates nothing; every
// rank's rows together are exactly the global batch (Sampler), so N ranks see what 1 rank sees.
//
// Two ways to read the source: as an endless stream (the default; global sample i is the source's
// sample i, rows wrap mod N), or in epochs (set_epochs: data/epoch_sampler.hpp). In epochs, the
// sampler's batch is the optimizer step's K x B rows (K = accumulation micro-steps, B = the micro-
// batch): micro-batch b = s K + k reads positions [k B, (k + 1) B) of step s's rows, of which this
// rank takes its Sampler share. The epoch (and the rows dropped at its end) are then those of the
// optimizer step, whatever K is, and every micro-batch is a pure function of (seed, step, k): the
// same at any world size.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/data_source.hpp"
#include "data/epoch_sampler.hpp"
#include "data/synthetic_dataset.hpp"
#include "ddp/train_config.hpp"

namespace microddp::kernels {
class Ops;
}

namespace microddp::ddp {

// The data work done off the step's thread since the pipeline started (the run summary's
// "prepared in the background"): its fill time over the batches it filled.
struct BackgroundWork {
  int depth = 0;             // batches prepared ahead (0: none, everything happens in load())
  std::int64_t batches = 0;  // batches filled so far (may run up to depth ahead of the last load)
  std::int64_t ns = 0;       // time spent filling them
};

class InputPipeline {
 public:
  virtual ~InputPipeline() = default;

  // Makes batch `batch` the model's input. nan_input (the fault point of ddp/step_faults.hpp):
  // element 0 of this rank's input becomes NaN before it reaches the model.
  virtual void load(std::int64_t batch, bool nan_input) = 0;
  // This rank's rows of every batch and the labels of the batch last loaded (device memory).
  std::int64_t rows() const { return sampler().local_count(); }
  virtual const std::int32_t* labels() const = 0;

  // Which rows of each batch are this rank's.
  virtual const data::Sampler& sampler() const = 0;
  // Train from `source` instead of the built-in synthetic set (it must outlive the pipeline and
  // match the model's in_dim and classes: core::UsageError otherwise). Before the first load().
  virtual void set_source(const data::DataSource& source) = 0;
  virtual const data::DataSource& source() const = 0;
  // Read the source in the epochs of `epochs` (its global batch: accum_steps x the micro-batch; its
  // rows: the source's). Before the first load().
  virtual void set_epochs(const data::EpochSampler& epochs, std::int64_t accum_steps) = 0;
  // The source and how it is read ("hdf5:f.h5:500x12:epochs(shuffled)"): what a checkpoint records
  // and a resume must match.
  virtual std::string describe() const = 0;
  virtual BackgroundWork background() const { return {}; }
  // The next load() may name any batch (Trainer::restore_progress): batches prepared ahead are dropped.
  virtual void restart() {}
};

// The pipeline a run gets (see the list above) for `source` (nullptr: the built-in synthetic set),
// with the source already set, and why, for the run's header ("prefetch 2", "prefetch off: ...").
// config.prefetch batches ahead; the pipeline writes into model_input (InputPipeline's contract).
// Calls source->prepare_fill_off_thread() (which may read an HDF5 file into memory).
struct InputChoice {
  std::unique_ptr<InputPipeline> pipeline;
  std::string note;
};
InputChoice make_input_pipeline(kernels::Ops& ops, const TrainConfig& config, int rank, int world, float* model_input,
                                const data::DataSource* source);

}  // namespace microddp::ddp
