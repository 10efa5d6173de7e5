// batch_rows.cpp — source, epochs and the rows of a batch (see batch_rows.hpp).
#include "ddp/batch_rows.hpp"

#include <limits>

#include "core/error.hpp"

namespace microddp::ddp {

BatchRows::BatchRows(const model::MlpConfig& model, std::uint64_t seed, std::int64_t global_batch, int rank, int world)
    : in_dim_(model.in_dim),
      classes_(model.classes),
      dataset_(seed, model.in_dim, model.classes),
      sampler_(global_batch, rank, world) {}

void BatchRows::set_source(const data::DataSource& source) {
  MDDP_USAGE_CHECK(source.in_dim() == in_dim_ && source.classes() == classes_,
                   "data source " << source.describe() << " has " << source.in_dim() << " features and "
                                  << source.classes() << " classes but the model expects " << in_dim_ << " and "
                                  << classes_
                                  << " (give matching --in-dim / --classes, or leave them out to take them from the "
                                     "file)");
  source_ = &source;
}

void BatchRows::set_epochs(const data::EpochSampler& epochs, std::int64_t accum_steps) {
  MDDP_CHECK(accum_steps >= 1 && epochs.global_batch() == accum_steps * sampler_.global_batch(),
             "epochs of " << epochs.global_batch() << "-row steps do not fit " << accum_steps << " micro-batches of "
                          << sampler_.global_batch());
  MDDP_CHECK(epochs.train_rows() == source_->rows(),
             "epochs over " << epochs.train_rows() << " rows, but the source has " << source_->rows());
  epochs_ = epochs;
  accum_steps_ = accum_steps;
}

std::string BatchRows::describe() const {
  if (!epochs_) return source_->describe();
  return source_->describe() + (epochs_->shuffle() ? ":epochs(shuffled)" : ":epochs(file order)");
}

void BatchRows::fill(std::int64_t batch, float* x, std::int32_t* y, std::int64_t* row_scratch) const {
  const std::int64_t rows = sampler_.local_count();
  if (epochs_) {
    const std::int64_t step = batch / accum_steps_, k = batch % accum_steps_;
    epochs_->rows(step, k * sampler_.global_batch() + sampler_.local_offset(), rows, row_scratch);
    source_->fill_rows(row_scratch, rows, x, y);
  } else {
    source_->fill(sampler_.first_sample(batch), rows, x, y);
  }
}

void poison_first_input(float* x) { x[0] = std::numeric_limits<float>::quiet_NaN(); }

}  // namespace microddp::ddp
