// direct_input.hpp — the input pipeline without a pipeline: each batch is produced when the step
// asks for it, on the step's thread (ddp/input_pipeline.hpp says what a pipeline provides).
//
// CPU: the data source fills the model's input buffer and the labels directly. GPU: it fills pinned
// staging buffers, and two asynchronous copies queued on the compute stream upload them; the
// staging is free again by the next load() because the step's one synchronisation waited for the
// uploads (docs/gpu.md); the synthetic set's rows are instead made on the GPU by its device
// generator, so the synthetic stream needs no staging and no upload. The source and its epochs:
// ddp/batch_rows.hpp (shared with ddp/prefetching_input.hpp, so both give the same rows).
// The trainer uses it with --prefetch 0, for the synthetic set on a GPU (made there: nothing to
// prefetch), and for a source whose fill must stay on the step's thread (an HDF5 file too large to
// hold in memory: io/hdf5_data_source.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ddp/batch_rows.hpp"
#include "ddp/input_pipeline.hpp"
#include "kernels/host_mirror.hpp"
#include "kernels/ops.hpp"
#include "model/param_layout.hpp"

namespace microddp::ddp {

class DirectInput final : public InputPipeline {
 public:
  // model_input: the model's input buffer (device memory), max_local_count(global_batch) rows of in_dim.
  DirectInput(kernels::Ops& ops, const model::MlpConfig& model, std::uint64_t seed, std::int64_t global_batch, int rank,
              int world, float* model_input);

  void load(std::int64_t batch, bool nan_input) override;
  const std::int32_t* labels() const override { return labels_.device(); }
  const data::Sampler& sampler() const override { return rows_.sampler(); }
  void set_source(const data::DataSource& source) override;
  const data::DataSource& source() const override { return rows_.source(); }
  void set_epochs(const data::EpochSampler& epochs, std::int64_t accum_steps) override;
  std::string describe() const override { return rows_.describe(); }

 private:
  // A device generator where the rows would otherwise be uploaded (a GPU), else nullptr.
  std::unique_ptr<data::DeviceRowGenerator> generator_for(const data::DataSource& source);

  kernels::Ops& ops_;
  BatchRows rows_;
  std::vector<std::int64_t> row_scratch_;  // this rank's source rows of the batch (epochs only)
  // The model's input and the labels, and their host views (pinned staging on a GPU, uploaded after
  // each fill; the buffers themselves on the CPU): the data source fills the views.
  kernels::HostMirror<float> input_;
  kernels::HostMirror<std::int32_t> labels_;
  // GPU only, when the source can make its rows on the device (the synthetic set): the batch is
  // written there directly, without staging or upload (data_source.hpp).
  std::unique_ptr<data::DeviceRowGenerator> generator_;
};

}  // namespace microddp::ddp
