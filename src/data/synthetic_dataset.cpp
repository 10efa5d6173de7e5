// synthetic_dataset.cpp — teacher-labelled Gaussian samples; balanced batch split.
#include "data/synthetic_dataset.hpp"

#include "core/error.hpp"
#include "core/rng.hpp"

namespace microddp::data {

namespace {
// RNG streams of the data set (parameters use streams < 2^32, see model/mlp.cpp).
constexpr std::uint64_t kTeacherStream = 0x7EAC4E5ull << 32;
constexpr std::uint64_t kFeatureStream = 0xFEA7u + (1ull << 33);
}  // namespace

SyntheticDataset::SyntheticDataset(std::uint64_t seed, std::int64_t in_dim, std::int64_t classes)
    : seed_(seed), in_dim_(in_dim), classes_(classes), teacher_(in_dim * classes) {
  MDDP_CHECK(in_dim > 0 && classes >= 2, "dataset needs in_dim > 0 and classes >= 2");
  for (std::int64_t i = 0; i < teacher_.count(); ++i) {
    teacher_[i] = core::normal01(seed_, kTeacherStream, static_cast<std::uint64_t>(i));
  }
}

void SyntheticDataset::fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const {
  MDDP_CHECK(first >= 0 && count >= 0, "bad sample range [" << first << ", " << first + count << ")");
  for (std::int64_t s = 0; s < count; ++s) {
    const auto index = static_cast<std::uint64_t>(first + s);
    float* row = x + s * in_dim_;
    for (std::int64_t j = 0; j < in_dim_; ++j) {
      row[j] = core::normal01(seed_, kFeatureStream,
                              index * static_cast<std::uint64_t>(in_dim_) + static_cast<std::uint64_t>(j));
    }
    std::int32_t best = 0;
    float best_score = 0.0f;
    for (std::int64_t c = 0; c < classes_; ++c) {
      const float* w = teacher_.data() + c * in_dim_;
      float score = 0.0f;
      for (std::int64_t j = 0; j < in_dim_; ++j) score += w[j] * row[j];
      if (c == 0 || score > best_score) {
        best_score = score;
        best = static_cast<std::int32_t>(c);
      }
    }
    y[s] = best;
  }
}

Sampler::Sampler(std::int64_t global_batch, int rank, int world_size) : global_batch_(global_batch) {
  MDDP_CHECK(global_batch > 0 && world_size > 0 && rank >= 0 && rank < world_size,
             "bad sampler arguments: batch " << global_batch << ", rank " << rank << " of " << world_size);
  const std::int64_t base = global_batch / world_size;
  const std::int64_t extra = global_batch % world_size;
  local_count_ = base + (rank < extra ? 1 : 0);
  local_offset_ = rank * base + (rank < extra ? rank : extra);
}

std::int64_t Sampler::max_local_count(std::int64_t global_batch, int world_size) {
  return global_batch / world_size + (global_batch % world_size != 0 ? 1 : 0);
}

}  // namespace microddp::data
