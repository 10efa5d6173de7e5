// synthetic_dataset.hpp — a learnable synthetic classification set and the per-rank sampler.
//
// Sample i is a pure function of (seed, i) (docs/design.md, invariants): its features are standard
// normals from the counter-based RNG, its label is the arg-max of a fixed random linear
// "teacher" W_t x (W_t itself a pure function of the seed). The same global batch is therefore
// produced at any world size, so N-rank training can be compared with 1-rank training exactly.
// The rows are defined and made by kernels/synthetic_data.hpp: the same bits on the CPU (fill) and
// on a GPU (make_device_generator: kernels write them into device memory, no host fill or upload).
// A linear teacher keeps the task learnable by the MLP in a few hundred steps (the default run
// must show the loss falling clearly) while the labels still depend on all features.
#pragma once

#include <cstdint>
#include <string>

#include "core/host_buffer.hpp"
#include "data/data_source.hpp"
#include "kernels/synthetic_data.hpp"

namespace microddp::data {

class SyntheticDataset final : public DataSource {
 public:
  SyntheticDataset(std::uint64_t seed, std::int64_t in_dim, std::int64_t classes);
  // Features from `seed`, labels from the teacher of `teacher_seed` (make-dataset --teacher-seed):
  // new rows of another run's task. teacher_seed == seed is the constructor above.
  SyntheticDataset(std::uint64_t seed, std::int64_t in_dim, std::int64_t classes, std::uint64_t teacher_seed);

  std::int64_t in_dim() const override { return in_dim_; }
  std::int64_t classes() const override { return classes_; }
  std::int64_t rows() const override { return 0; }  // unbounded
  std::string describe() const override { return "synthetic"; }

  // Writes samples [first, first + count): x(count, in_dim) row-major, y(count).
  void fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const override;
  // The same rows made by ops on its device (a GPU: kernels, no host work); uploads the teacher once.
  std::unique_ptr<DeviceRowGenerator> make_device_generator(kernels::Ops& ops) const override;
  // fill() only reads the seed and the teacher, fixed at construction: safe on any thread.
  bool prepare_fill_off_thread() const override { return true; }

  // What defines the rows; its teacher is this object's host copy.
  kernels::SyntheticSpec spec() const;

 private:
  std::uint64_t seed_;
  std::int64_t in_dim_;
  std::int64_t classes_;
  core::HostBuffer<float> teacher_;  // (classes, in_dim), row-major
};

// Which rows of each global batch this rank owns. Global batch s holds samples
// [s*B, (s+1)*B); rank r owns a contiguous, balanced share: the first B % n ranks get one extra
// row, so uneven splits need no padding and every sample is used exactly once.
class Sampler {
 public:
  Sampler(std::int64_t global_batch, int rank, int world_size);

  std::int64_t global_batch() const { return global_batch_; }
  std::int64_t local_count() const { return local_count_; }
  std::int64_t local_offset() const { return local_offset_; }  // first row of this rank in a batch
  // Global index of this rank's first sample in batch `step` (step counts from 0).
  std::int64_t first_sample(std::int64_t step) const { return step * global_batch_ + local_offset_; }
  // Largest share any rank gets (sizes per-rank buffers identically everywhere).
  static std::int64_t max_local_count(std::int64_t global_batch, int world_size);

 private:
  std::int64_t global_batch_;
  std::int64_t local_count_;
  std::int64_t local_offset_;
};

}  // namespace microddp::data
