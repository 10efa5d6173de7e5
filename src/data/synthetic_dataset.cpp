// synthetic_dataset.cpp — teacher-labelled Gaussian samples; balanced batch split.
#include "data/synthetic_dataset.hpp"

#include "core/error.hpp"
#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"

namespace microddp::data {

namespace {
// RNG streams of the data set (parameters use streams < 2^32, see model/mlp.cpp).
constexpr std::uint64_t kTeacherStream = 0x7EAC4E5ull << 32;
constexpr std::uint64_t kFeatureStream = 0xFEA7u + (1ull << 33);

// The rows made by an Ops: the teacher copied to its device once, then one synthetic_rows call per fill.
class SyntheticDeviceRows final : public DeviceRowGenerator {
 public:
  SyntheticDeviceRows(kernels::Ops& ops, const kernels::SyntheticSpec& host_spec)
      : ops_(ops), teacher_(ops, host_spec.classes * host_spec.in_dim), spec_(host_spec) {
    teacher_.from_host(host_spec.teacher, 0, teacher_.count());
    spec_.teacher = teacher_.data();
  }
  void fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) override {
    ops_.synthetic_rows(spec_, first, count, x, y);
  }

 private:
  kernels::Ops& ops_;
  kernels::OpsBuffer<float> teacher_;  // (classes, in_dim) on ops.device()
  kernels::SyntheticSpec spec_;        // teacher pointing at teacher_
};
}  // namespace

SyntheticDataset::SyntheticDataset(std::uint64_t seed, std::int64_t in_dim, std::int64_t classes)
    : SyntheticDataset(seed, in_dim, classes, seed) {}

SyntheticDataset::SyntheticDataset(std::uint64_t seed, std::int64_t in_dim, std::int64_t classes,
                                   std::uint64_t teacher_seed)
    : seed_(seed), in_dim_(in_dim), classes_(classes), teacher_(in_dim * classes) {
  MDDP_CHECK(in_dim > 0 && classes >= 2, "dataset needs in_dim > 0 and classes >= 2");
  kernels::portable_normal_fill(teacher_seed, kTeacherStream, 0, teacher_.count(), teacher_.data());
}

kernels::SyntheticSpec SyntheticDataset::spec() const {
  return kernels::SyntheticSpec{seed_, kFeatureStream, in_dim_, classes_, teacher_.data()};
}

void SyntheticDataset::fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const {
  kernels::synthetic_rows_host(spec(), first, count, x, y);
}

std::unique_ptr<DeviceRowGenerator> SyntheticDataset::make_device_generator(kernels::Ops& ops) const {
  return std::make_unique<SyntheticDeviceRows>(ops, spec());
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
