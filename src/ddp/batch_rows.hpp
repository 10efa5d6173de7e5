// batch_rows.hpp — which rows of the source make this rank's share of global batch b, and filling
// them into host memory: the part every input pipeline shares (ddp/direct_input.hpp fills on the
// step's thread, ddp/prefetching_input.hpp on its loader thread), so both give the same bits.
//
// The source is the built-in synthetic set (data::SyntheticDataset of the run's seed) unless
// set_source() gave another one; it is read as an endless stream, or in epochs after set_epochs()
// (ddp/input_pipeline.hpp says how micro-batches map to an epoch's rows).
// Contract: fill() is const and touches only the source and its arguments, so one thread may fill
// while another reads sampler() or describe(); set_source() and set_epochs() come before any fill().
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "data/data_source.hpp"
#include "data/epoch_sampler.hpp"
#include "data/synthetic_dataset.hpp"
#include "model/param_layout.hpp"

namespace microddp::ddp {

class BatchRows {
 public:
  BatchRows(const model::MlpConfig& model, std::uint64_t seed, std::int64_t global_batch, int rank, int world);

  const data::Sampler& sampler() const { return sampler_; }
  const data::DataSource& source() const { return *source_; }
  const data::SyntheticDataset& synthetic() const { return dataset_; }
  bool in_epochs() const { return epochs_.has_value(); }
  // core::UsageError when the source's in_dim or classes differ from the model's.
  void set_source(const data::DataSource& source);
  void set_epochs(const data::EpochSampler& epochs, std::int64_t accum_steps);
  std::string describe() const;

  // This rank's sampler().local_count() rows of batch `batch`: x (rows, in_dim) row-major, y (rows),
  // host memory. `row_scratch`: local_count() entries (the source rows of an epoch's batch).
  void fill(std::int64_t batch, float* x, std::int32_t* y, std::int64_t* row_scratch) const;

 private:
  std::int64_t in_dim_, classes_;
  data::SyntheticDataset dataset_;
  const data::DataSource* source_ = &dataset_;  // dataset_ unless set_source()
  data::Sampler sampler_;
  std::optional<data::EpochSampler> epochs_;  // set: read in epochs (set_epochs)
  std::int64_t accum_steps_ = 1;
};

// Element 0 of this rank's input NaN (the nan_input fault point, ddp/step_faults.hpp), in host memory.
void poison_first_input(float* x);

}  // namespace microddp::ddp
