// memory_source.hpp — a data::DataSource over rows held in memory, for tests: sample i is row
// i mod N (as every source wraps). Its fill may run off the step's thread (prepare_fill_off_thread)
// unless told otherwise, and it throws core::UsageError for one chosen sample (a failing read).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "data/data_source.hpp"
#include "data/synthetic_dataset.hpp"

namespace microddp::testing {

class MemorySource final : public data::DataSource {
 public:
  // x: (rows, in_dim) row-major, y: (rows). bad_sample < 0: every sample reads.
  MemorySource(std::int64_t in_dim, std::int64_t classes, std::vector<float> x, std::vector<std::int32_t> y,
               bool fill_off_thread = true, std::int64_t bad_sample = -1)
      : in_dim_(in_dim),
        classes_(classes),
        x_(std::move(x)),
        y_(std::move(y)),
        fill_off_thread_(fill_off_thread),
        bad_sample_(bad_sample) {}
  // The first `rows` samples of the synthetic set of `seed`.
  static MemorySource synthetic(std::uint64_t seed, std::int64_t rows, std::int64_t in_dim, std::int64_t classes,
                                bool fill_off_thread = true, std::int64_t bad_sample = -1) {
    std::vector<float> x(static_cast<std::size_t>(rows * in_dim));
    std::vector<std::int32_t> y(static_cast<std::size_t>(rows));
    data::SyntheticDataset(seed, in_dim, classes).fill(0, rows, x.data(), y.data());
    return MemorySource(in_dim, classes, std::move(x), std::move(y), fill_off_thread, bad_sample);
  }

  std::int64_t in_dim() const override { return in_dim_; }
  std::int64_t classes() const override { return classes_; }
  std::int64_t rows() const override { return static_cast<std::int64_t>(y_.size()); }
  std::string describe() const override { return "memory"; }
  void fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const override {
    for (std::int64_t s = 0; s < count; ++s) {
      MDDP_USAGE_CHECK(first + s != bad_sample_, "memory: sample " << bad_sample_ << " is unreadable");
      const auto r = static_cast<std::size_t>((first + s) % rows());
      std::memcpy(x + s * in_dim_, x_.data() + r * static_cast<std::size_t>(in_dim_),
                  static_cast<std::size_t>(in_dim_) * sizeof(float));
      y[s] = y_[r];
    }
  }
  bool prepare_fill_off_thread() const override { return fill_off_thread_; }

 private:
  std::int64_t in_dim_, classes_;
  std::vector<float> x_;
  std::vector<std::int32_t> y_;
  bool fill_off_thread_;
  std::int64_t bad_sample_;
};

}  // namespace microddp::testing
