// direct_input.cpp — fill (and on a GPU upload) each batch when the step asks for it.
#include "ddp/direct_input.hpp"

#include <limits>

#include "core/error.hpp"

namespace microddp::ddp {

DirectInput::DirectInput(kernels::Ops& ops, const model::MlpConfig& model, std::uint64_t seed,
                         std::int64_t global_batch, int rank, int world, float* model_input)
    : ops_(ops),
      on_host_(ops.device() == core::Device::Host),
      in_dim_(model.in_dim),
      classes_(model.classes),
      dataset_(seed, model.in_dim, model.classes),
      sampler_(global_batch, rank, world),
      model_input_(model_input),
      labels_(ops, data::Sampler::max_local_count(global_batch, world)) {
  if (!on_host_) {
    const std::int64_t rows = data::Sampler::max_local_count(global_batch, world);
    host_input_ = kernels::OpsHostBuffer<float>(ops, rows * in_dim_);
    device_labels_ = kernels::OpsBuffer<std::int32_t>(ops, rows);
    generator_ = dataset_.make_device_generator(ops_);
  }
}

void DirectInput::load(std::int64_t batch, bool nan_input) {
  const std::int64_t rows = sampler_.local_count();
  if (generator_ != nullptr && !epochs_) {
    // Made on the device, on the compute stream: no host fill, no upload (the synthetic set's rows,
    // bit for bit those of fill(); tests/data/test_synthetic_device.cpp).
    generator_->fill(sampler_.first_sample(batch), rows, model_input_, device_labels_.data());
    if (nan_input) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      ops_.copy_from_host(model_input_, &nan, sizeof(float));  // a fault point: a synchronous copy is fine
    }
    return;
  }
  float* x = on_host_ ? model_input_ : host_input_.data();
  if (epochs_) {
    const std::int64_t step = batch / accum_steps_, k = batch % accum_steps_;
    epochs_->rows(step, k * sampler_.global_batch() + sampler_.local_offset(), rows, rows_.data());
    source_->fill_rows(rows_.data(), rows, x, labels_.data());
  } else {
    source_->fill(sampler_.first_sample(batch), rows, x, labels_.data());
  }
  if (nan_input) x[0] = std::numeric_limits<float>::quiet_NaN();
  if (!on_host_) {
    ops_.copy_from_host_async(model_input_, x, static_cast<std::size_t>(rows * in_dim_) * sizeof(float));
    ops_.copy_from_host_async(device_labels_.data(), labels_.data(),
                              static_cast<std::size_t>(rows) * sizeof(std::int32_t));
  }
}

void DirectInput::set_source(const data::DataSource& source) {
  MDDP_USAGE_CHECK(source.in_dim() == in_dim_ && source.classes() == classes_,
                   "data source " << source.describe() << " has " << source.in_dim() << " features and "
                                  << source.classes() << " classes but the model expects " << in_dim_ << " and "
                                  << classes_
                                  << " (give matching --in-dim / --classes, or leave them out to take them from the "
                                     "file)");
  source_ = &source;
  generator_ = on_host_ ? nullptr : source.make_device_generator(ops_);
}

void DirectInput::set_epochs(const data::EpochSampler& epochs, std::int64_t accum_steps) {
  MDDP_CHECK(accum_steps >= 1 && epochs.global_batch() == accum_steps * sampler_.global_batch(),
             "epochs of " << epochs.global_batch() << "-row steps do not fit " << accum_steps << " micro-batches of "
                          << sampler_.global_batch());
  MDDP_CHECK(epochs.train_rows() == source_->rows(),
             "epochs over " << epochs.train_rows() << " rows, but the source has " << source_->rows());
  epochs_ = epochs;
  accum_steps_ = accum_steps;
  rows_.assign(static_cast<std::size_t>(sampler_.local_count()), 0);
}

std::string DirectInput::describe() const {
  if (!epochs_) return source_->describe();
  return source_->describe() + (epochs_->shuffle() ? ":epochs(shuffled)" : ":epochs(file order)");
}

}  // namespace microddp::ddp
