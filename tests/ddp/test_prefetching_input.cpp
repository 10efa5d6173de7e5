// test_prefetching_input.cpp — the prefetching input pipeline (ddp/prefetching_input.hpp) against
// DirectInput, on every rank of np 1 and np 3 (each rank compares its own share):
//   * the same batches, bit for bit, for the synthetic stream and for shuffled epochs with
//     accumulation, from batch 0 and from a later batch (a resumed run's first load);
//   * nan_input poisons element 0 as DirectInput does; a skipped or repeated batch is a
//     core::Error; an exception thrown by the source's fill on the loader thread is the error of
//     that batch's load() on the step's thread;
//   * training with prefetch 2 equals prefetch 0 bitwise (losses and parameters), on the synthetic
//     set and on an in-memory source in shuffled epochs with accumulation, across a resume;
//   * the trainer keeps DirectInput for a source whose fill must stay on the step's thread;
//   * when the data-source lease ends, no fill of the source is running or starts any more, though
//     the loader was reading ahead of the steps (ddp/trainer_data_lease.hpp; `train` crashed at exit
//     now and then when the file's owner went first), and the trainer refuses to step.
// CPU only; small sizes (a few ms per case).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/factory.hpp"
#include "core/error.hpp"
#include "data/epoch_sampler.hpp"
#include "data/synthetic_dataset.hpp"
#include "ddp/trainer_data_lease.hpp"
#include "ddp/direct_input.hpp"
#include "ddp/prefetching_input.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "support/memory_source.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::ddp {
namespace {

constexpr std::int64_t kDim = 5, kClasses = 3;
constexpr std::uint64_t kSeed = 7;

using microddp::testing::MemorySource;

// The synthetic set's first `rows` rows (of another seed) in memory: a finite source (epochs need
// one); its fill may run off the step's thread unless told otherwise, and fails for sample `bad`.
MemorySource memory_rows(std::int64_t rows, bool thread_safe, std::int64_t bad = -1) {
  return MemorySource::synthetic(kSeed + 1, rows, kDim, kClasses, thread_safe, bad);
}

const model::MlpConfig kModel{kDim, 8, 2, kClasses};

struct Batch {
  std::vector<float> x;
  std::vector<std::int32_t> y;
};

// Batches [first, first + n) of `in` (a CPU pipeline writing into `input`).
std::vector<Batch> load_batches(InputPipeline& in, std::vector<float>& input, std::int64_t first, std::int64_t n,
                                std::int64_t nan_at = -1) {
  std::vector<Batch> out;
  for (std::int64_t b = first; b < first + n; ++b) {
    in.load(b, b == nan_at);
    out.push_back({std::vector<float>(input.begin(), input.begin() + in.rows() * kDim),
                   std::vector<std::int32_t>(in.labels(), in.labels() + in.rows())});
  }
  return out;
}

void expect_same(const std::vector<Batch>& a, const std::vector<Batch>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].x.size(), b[i].x.size()) << what;
    // memcmp: bitwise, so a NaN compares equal to the same NaN.
    EXPECT_EQ(std::memcmp(a[i].x.data(), b[i].x.data(), a[i].x.size() * sizeof(float)), 0) << what << " batch " << i;
    EXPECT_EQ(a[i].y, b[i].y) << what << " batch " << i;
  }
}

// Both pipelines on this rank, optionally over `source` in shuffled epochs of `accum` micro-batches.
void compare_pipelines(const data::DataSource* source, std::int64_t accum, std::int64_t first,
                       const std::string& what) {
  const auto& rt = microddp::testing::runtime();
  const std::int64_t micro = 7;  // uneven shares over 3 ranks
  auto ops = kernels::make_cpu_ops(1);
  const auto rows = static_cast<std::size_t>(data::Sampler::max_local_count(micro, rt.size()) * kDim);
  std::vector<float> in_direct(rows), in_prefetch(rows);
  DirectInput direct(*ops, kModel, kSeed, micro, rt.rank(), rt.size(), in_direct.data());
  PrefetchingInput prefetch(*ops, kModel, kSeed, micro, rt.rank(), rt.size(), in_prefetch.data(), 3);
  if (source != nullptr) {
    const data::EpochSampler epochs(source->rows(), micro * accum, kSeed, /*shuffle=*/true);
    for (InputPipeline* in : {static_cast<InputPipeline*>(&direct), static_cast<InputPipeline*>(&prefetch)}) {
      in->set_source(*source);
      in->set_epochs(epochs, accum);
    }
  }
  EXPECT_EQ(direct.describe(), prefetch.describe());
  const std::int64_t n = 12, nan_at = first + 4;
  expect_same(load_batches(direct, in_direct, first, n, nan_at), load_batches(prefetch, in_prefetch, first, n, nan_at),
              what + " np " + std::to_string(rt.size()) + " rank " + std::to_string(rt.rank()));
  const BackgroundWork w = prefetch.background();
  EXPECT_EQ(w.depth, 3);
  EXPECT_GE(w.batches, n);
  EXPECT_LE(w.batches, n + 3);
}

TEST(PrefetchingInput, SameBatchesAsDirectInputStream) {
  compare_pipelines(nullptr, 1, 0, "synthetic stream from batch 0");
  compare_pipelines(nullptr, 1, 9, "synthetic stream from batch 9");
}

TEST(PrefetchingInput, SameBatchesAsDirectInputShuffledEpochs) {
  const MemorySource source =
      memory_rows(40, true);  // steps of 14 rows: 2 per epoch, so 12 micro-batches cross 3 epochs
  compare_pipelines(&source, 2, 0, "shuffled epochs from batch 0");
  compare_pipelines(&source, 2, 5, "shuffled epochs from batch 5");
}

TEST(PrefetchingInput, LoadsAreConsecutive) {
  auto ops = kernels::make_cpu_ops(1);
  std::vector<float> input(static_cast<std::size_t>(4 * kDim));
  PrefetchingInput in(*ops, kModel, kSeed, 4, 0, 1, input.data());
  in.load(3, false);
  EXPECT_THROW(in.load(5, false), core::Error);  // skipped batch 4
  PrefetchingInput again(*ops, kModel, kSeed, 4, 0, 1, input.data());
  again.load(0, false);
  EXPECT_THROW(again.load(0, false), core::Error);  // repeated
  EXPECT_THROW(PrefetchingInput(*ops, kModel, kSeed, 4, 0, 1, input.data(), 0), core::Error);
}

TEST(PrefetchingInput, FillErrorIsTheLoadError) {
  const MemorySource source = memory_rows(40, true, /*bad=*/3 * 4 + 1);  // a row of batch 3 (4 rows per batch)
  auto ops = kernels::make_cpu_ops(1);
  std::vector<float> input(static_cast<std::size_t>(4 * kDim));
  PrefetchingInput in(*ops, kModel, kSeed, 4, 0, 1, input.data());
  in.set_source(source);
  for (std::int64_t b = 0; b < 3; ++b) EXPECT_NO_THROW(in.load(b, false)) << "batch " << b;
  try {
    in.load(3, false);
    ADD_FAILURE() << "batch 3's fill failed on the loader thread, but load(3) returned";
  } catch (const core::UsageError& e) {  // the type and message the source threw
    EXPECT_NE(std::string(e.what()).find("sample 13 is unreadable"), std::string::npos) << e.what();
  }
}

// ---- through the trainer ----------------------------------------------------------------------

TrainConfig small_config(std::int64_t prefetch) {
  TrainConfig c;
  c.model = model::MlpConfig{kDim, 16, 2, kClasses};
  c.global_batch = 7;
  c.steps = 8;
  c.seed = kSeed;
  c.strategy = Strategy::Bucketed;
  c.prefetch = prefetch;
  return c;
}

struct TrainRun {
  std::vector<double> losses;
  std::vector<float> params;
  std::string note;
};

// cfg.steps steps (over `source` in shuffled epochs when given); step `jump_over` (1-based, 0 =
// none) is skipped as a resumed run would, so the pipeline's first load is a later batch.
TrainRun train(const TrainConfig& cfg, const data::DataSource* source, std::int64_t jump_over) {
  auto comm = comm::make_communicator("mpi", microddp::testing::runtime());
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(cfg, *comm, *ops);
  std::optional<data::EpochSampler> epochs;
  ddp::DataSourceLease lease;
  if (source != nullptr) {
    epochs.emplace(source->rows(), cfg.global_batch * cfg.accum_steps, cfg.seed, true);
    lease = t.set_data_source(*source);
    t.set_epochs(*epochs);
  }
  t.setup();
  TrainRun r;
  while (t.steps_done() < cfg.steps) {
    if (t.steps_done() + 1 == jump_over) {
      t.restore_progress(t.steps_done() + 1);
      continue;
    }
    r.losses.push_back(t.step().loss);
  }
  r.params.assign(t.model().param_data(), t.model().param_data() + t.model().flat_count());
  r.note = t.input_note();
  return r;
}

void expect_same_run(const TrainRun& a, const TrainRun& b, const std::string& what) {
  EXPECT_EQ(a.losses, b.losses) << what;
  ASSERT_EQ(a.params.size(), b.params.size());
  EXPECT_EQ(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)), 0) << what;
}

TEST(PrefetchingTraining, SameAsDirectInputSynthetic) {
  const TrainRun direct = train(small_config(0), nullptr, 0), prefetch = train(small_config(2), nullptr, 0);
  EXPECT_EQ(direct.note.rfind("prefetch 0", 0), 0u) << direct.note;
  EXPECT_EQ(prefetch.note, "prefetch 2");
  expect_same_run(direct, prefetch, "synthetic");
  // Resumed: the loader's first batch is step 3's.
  expect_same_run(train(small_config(0), nullptr, 1), train(small_config(2), nullptr, 1),
                  "synthetic, jump over step 1");
}

TEST(PrefetchingTraining, SameAsDirectInputEpochsWithAccumulation) {
  const MemorySource source = memory_rows(40, true);
  TrainConfig c0 = small_config(0), c2 = small_config(2);
  c0.accum_steps = c2.accum_steps = 2;
  const TrainRun direct = train(c0, &source, 2), prefetch = train(c2, &source, 2);
  EXPECT_EQ(prefetch.note, "prefetch 2");
  expect_same_run(direct, prefetch, "shuffled epochs, 2 micro-batches, jump over step 2");
}

TEST(PrefetchingTraining, SourceThatMustStayOnTheStepsThreadKeepsDirectInput) {
  const MemorySource source = memory_rows(40, /*thread_safe=*/false);
  const TrainRun r = train(small_config(2), &source, 0);
  EXPECT_EQ(r.note.rfind("prefetch off", 0), 0u) << r.note;
  expect_same_run(train(small_config(0), &source, 0), r, "a source filled on the step's thread");
}

// An in-memory source whose fills take a while and that can be closed: a fill running or starting
// after close() is counted (what reading a destroyed source would be).
class ClosableSource final : public data::DataSource {
 public:
  explicit ClosableSource(const MemorySource& rows) : rows_(rows) {}
  std::int64_t in_dim() const override { return rows_.in_dim(); }
  std::int64_t classes() const override { return rows_.classes(); }
  std::int64_t rows() const override { return rows_.rows(); }
  std::string describe() const override { return "closable"; }
  bool prepare_fill_off_thread() const override { return true; }
  void fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const override {
    if (closed_) ++fills_after_close_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the loader is inside a fill for long
    rows_.fill(first, count, x, y);
    if (closed_) ++fills_after_close_;
  }
  void close() { closed_ = true; }
  int fills_after_close() const { return fills_after_close_; }

 private:
  const MemorySource& rows_;
  std::atomic<bool> closed_{false};
  mutable std::atomic<int> fills_after_close_{0};
};

TEST(PrefetchingTraining, LeaseEndStopsEveryReadOfTheSource) {
  const MemorySource rows = memory_rows(40, true);
  ClosableSource source(rows);
  auto comm = comm::make_communicator("mpi", microddp::testing::runtime());
  auto ops = kernels::make_cpu_ops(1);
  Trainer t(small_config(4), *comm, *ops);
  {
    const DataSourceLease lease = t.set_data_source(source);
    EXPECT_EQ(t.input_note(), "prefetch 4");
    t.setup();
    for (int s = 0; s < 3; ++s) t.step();
    // The loader now fills batches 3 .. 6 ahead of the steps, 20 ms each.
  }
  source.close();
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // the loader's read-ahead, had it gone on
  EXPECT_EQ(source.fills_after_close(), 0) << "the loader read the source after the lease ended";
  EXPECT_THROW(t.step(), core::Error);
  // A new loan resumes the steps where they were.
  const DataSourceLease again = t.set_data_source(source);
  EXPECT_NO_THROW(t.step());
  EXPECT_EQ(t.steps_done(), 4);
}

}  // namespace
}  // namespace microddp::ddp
