// direct_input.cpp — fill (and on a GPU upload) each batch when the step asks for it.
#include "ddp/direct_input.hpp"

#include <limits>

#include "core/error.hpp"

namespace microddp::ddp {

DirectInput::DirectInput(kernels::Ops& ops, const model::MlpConfig& model, std::uint64_t seed,
                         std::int64_t global_batch, int rank, int world, float* model_input)
    : ops_(ops),
      rows_(model, seed, global_batch, rank, world),
      row_scratch_(static_cast<std::size_t>(rows_.sampler().local_count()), 0),
      input_(ops, model_input, data::Sampler::max_local_count(global_batch, world) * model.in_dim,
             kernels::Staging::Pinned),
      labels_(kernels::HostMirror<std::int32_t>::allocate(ops, data::Sampler::max_local_count(global_batch, world),
                                                          kernels::Staging::Pinned)),
      generator_(generator_for(rows_.synthetic())) {}

std::unique_ptr<data::DeviceRowGenerator> DirectInput::generator_for(const data::DataSource& source) {
  // Made on the device, the rows skip the host fill and the upload; on the CPU the fill already
  // writes the model's input (the view is the buffer), so there is nothing to save.
  return input_.is_copy() ? source.make_device_generator(ops_) : nullptr;
}

void DirectInput::load(std::int64_t batch, bool nan_input) {
  const data::Sampler& sampler = rows_.sampler();
  const std::int64_t rows = sampler.local_count();
  if (generator_ != nullptr && !rows_.in_epochs()) {
    // Made on the device, on the compute stream: no host fill, no upload (the synthetic set's rows,
    // bit for bit those of fill(); tests/data/test_synthetic_device.cpp).
    generator_->fill(sampler.first_sample(batch), rows, input_.device(), labels_.device());
    if (nan_input) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      ops_.copy_from_host(input_.device(), &nan, sizeof(float));  // a fault point: a synchronous copy is fine
    }
    return;
  }
  float* x = input_.host();
  rows_.fill(batch, x, labels_.host(), row_scratch_.data());
  if (nan_input) poison_first_input(x);
  input_.from_host_async(rows * rows_.source().in_dim());  // nothing to do on the CPU
  labels_.from_host_async(rows);
}

void DirectInput::set_source(const data::DataSource& source) {
  rows_.set_source(source);
  generator_ = generator_for(source);
}

void DirectInput::set_epochs(const data::EpochSampler& epochs, std::int64_t accum_steps) {
  rows_.set_epochs(epochs, accum_steps);
}

}  // namespace microddp::ddp
