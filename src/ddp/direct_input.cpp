// direct_input.cpp — fill (and on a GPU upload) each batch when the step asks for it.
#include "ddp/direct_input.hpp"

#include <limits>

#include "core/error.hpp"

namespace microddp::ddp {

DirectInput::DirectInput(kernels::Ops& ops, const model::MlpConfig& model, std::uint64_t seed,
                         std::int64_t global_batch, int rank, int world, float* model_input)
    : ops_(ops),
      on_host_(ops.device() == core::Device::Host),
      rows_(model, seed, global_batch, rank, world),
      row_scratch_(static_cast<std::size_t>(rows_.sampler().local_count()), 0),
      model_input_(model_input),
      labels_(ops, data::Sampler::max_local_count(global_batch, world)) {
  if (!on_host_) {
    const std::int64_t rows = data::Sampler::max_local_count(global_batch, world);
    host_input_ = kernels::OpsHostBuffer<float>(ops, rows * model.in_dim);
    device_labels_ = kernels::OpsBuffer<std::int32_t>(ops, rows);
    generator_ = rows_.synthetic().make_device_generator(ops_);
  }
}

void DirectInput::load(std::int64_t batch, bool nan_input) {
  const data::Sampler& sampler = rows_.sampler();
  const std::int64_t rows = sampler.local_count();
  if (generator_ != nullptr && !rows_.in_epochs()) {
    // Made on the device, on the compute stream: no host fill, no upload (the synthetic set's rows,
    // bit for bit those of fill(); tests/data/test_synthetic_device.cpp).
    generator_->fill(sampler.first_sample(batch), rows, model_input_, device_labels_.data());
    if (nan_input) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      ops_.copy_from_host(model_input_, &nan, sizeof(float));  // a fault point: a synchronous copy is fine
    }
    return;
  }
  float* x = on_host_ ? model_input_ : host_input_.data();
  rows_.fill(batch, x, labels_.data(), row_scratch_.data());
  if (nan_input) poison_first_input(x);
  if (!on_host_) {
    const std::int64_t in_dim = rows_.source().in_dim();
    ops_.copy_from_host_async(model_input_, x, static_cast<std::size_t>(rows * in_dim) * sizeof(float));
    ops_.copy_from_host_async(device_labels_.data(), labels_.data(),
                              static_cast<std::size_t>(rows) * sizeof(std::int32_t));
  }
}

void DirectInput::set_source(const data::DataSource& source) {
  rows_.set_source(source);
  generator_ = on_host_ ? nullptr : source.make_device_generator(ops_);
}

void DirectInput::set_epochs(const data::EpochSampler& epochs, std::int64_t accum_steps) {
  rows_.set_epochs(epochs, accum_steps);
}

}  // namespace microddp::ddp
