// test_evaluator.cpp — forward-only evaluation (ddp/evaluator.hpp), at np 1, 2 and 3:
//   * a hand-computed case: a tiny model with known weights on six rows gives exact counts (rows,
//     correct, the confusion matrix, ties going to the first class) and the closed-form loss;
//   * the all-reduced counts are identical at every world size and equal a single process's run of
//     all rows (synthetic data, a random model), whatever the block size and with a row map;
//   * shards are whole blocks and tile the positions; logits reach the callback with their rows;
//     a non-finite loss is counted apart; a source of the wrong shape is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "comm/factory.hpp"
#include "core/error.hpp"
#include "data/synthetic_dataset.hpp"
#include "ddp/evaluator.hpp"
#include "kernels/ops.hpp"
#include "model/mlp.hpp"
#include "support/memory_source.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::ddp {
namespace {

using microddp::testing::MemorySource;

// in 2 -> Linear(2, 2) + ReLU -> Linear(2, 3): W0 = I, b0 = 0, W1 = [[1, 0], [0, 1], [0, 0]], b1 = 0,
// so the logits of x are exactly (relu(x0), relu(x1), 0).
void set_hand_weights(model::FullMLP& m) {
  std::vector<float> flat(static_cast<std::size_t>(m.flat_count()), 0.0f);
  auto put = [&](const model::ParamInfo& p, std::vector<float> v) {
    ASSERT_EQ(static_cast<std::int64_t>(v.size()), p.count) << p.name;
    std::copy(v.begin(), v.end(), flat.begin() + p.offset);
  };
  put(m.weight(0), {1, 0, 0, 1});
  put(m.bias(0), {0, 0});
  put(m.weight(1), {1, 0, 0, 1, 0, 0});
  put(m.bias(1), {0, 0, 0});
  m.param_buffer().from_host(flat.data(), 0, m.flat_count());
}

MemorySource hand_rows() {
  // x, label -> logits, prediction (first largest), loss = log(sum exp z) - z_label
  return MemorySource(2, 3,
                      {2, 0,      // label 0: (2, 0, 0)   -> 0 right; log(e^2 + 2) - 2
                       0, 3,      // label 1: (0, 3, 0)   -> 1 right; log(e^3 + 2) - 3
                       -1, -1,    // label 2: (0, 0, 0)   -> 0 (tie) wrong; log 3
                       1, 1,      // label 0: (1, 1, 0)   -> 0 (tie) right; log(2e + 1) - 1
                       0, 5,      // label 0: (0, 5, 0)   -> 1 wrong; log(e^5 + 2)
                       0, 0.5f},  // label 2: (0, .5, 0)  -> 1 wrong; log(2 + e^0.5)
                      {0, 1, 2, 0, 0, 2});
}

double hand_loss_sum() {
  const double e = std::exp(1.0);
  return std::log(e * e + 2) - 2 + std::log(std::exp(3.0) + 2) - 3 + std::log(3.0) + std::log(2 * e + 1) - 1 +
         std::log(std::exp(5.0) + 2) + std::log(2 + std::exp(0.5));
}

struct Fixture {
  std::unique_ptr<kernels::Ops> ops = kernels::make_cpu_ops(1);
  std::unique_ptr<comm::Communicator> comm = comm::make_communicator("mpi", testing::runtime());
};

TEST(Evaluator, HandComputedCountsAtEveryWorldSize) {
  Fixture f;
  const MemorySource src = hand_rows();
  for (std::int64_t block : {1, 2, 4, 6, 8}) {
    model::FullMLP m({2, 2, 1, 3}, block, *f.ops);
    set_hand_weights(m);
    Evaluator ev(m, *f.ops, block);
    const EvalCounts c = evaluate(*f.comm, ev, src, 6);
    EXPECT_EQ(c.rows, 6);
    EXPECT_EQ(c.correct, 3);
    EXPECT_EQ(c.confusion, (std::vector<std::int64_t>{2, 1, 0,    // true 0: rows 0, 3 right; row 4 -> 1
                                                      0, 1, 0,    // true 1: row 1 right
                                                      1, 1, 0}))  // true 2: row 2 -> 0, row 5 -> 1
        << "block " << block;
    EXPECT_EQ(c.class_rows(0), 3);
    EXPECT_EQ(c.class_correct(0), 2);
    EXPECT_EQ(c.class_accuracy(2), 0.0);
    EXPECT_DOUBLE_EQ(c.accuracy(), 0.5);
    EXPECT_EQ(c.loss_nan + c.loss_huge, 0);
    // Exact logits; the double loss per row and its fixed-point sum (6 roundings of 2^-33 at most)
    // stay within 1e-8 of the closed form.
    EXPECT_NEAR(c.loss_sum(), hand_loss_sum(), 1e-8);
    EXPECT_NEAR(c.mean_loss(), hand_loss_sum() / 6, 1e-8);
  }
}

TEST(Evaluator, SameCountsAtEveryWorldSizeAsOneProcess) {
  // A random model on synthetic rows: the all-reduced counts (every bit, the loss sums included)
  // equal one process's run over all positions, for several block sizes and with a row map.
  Fixture f;
  const data::SyntheticDataset src(3, 12, 4);
  const std::int64_t total = 157;  // not a multiple of any block size below, nor of 2 or 3
  for (std::int64_t block : {1, 5, 16, 64, 200}) {
    model::FullMLP m({12, 16, 2, 4}, block, *f.ops);
    m.init(11);
    Evaluator ev(m, *f.ops, block);
    for (bool mapped : {false, true}) {
      Evaluator::RowMap row_of;
      if (mapped) row_of = [&](std::int64_t p) { return (p * 7 + 3) % total; };  // a permutation of [0, 157)
      const EvalCounts all = evaluate(*f.comm, ev, src, total, row_of);
      const EvalCounts alone = ev.run(src, 0, total, row_of);  // this process, every row
      EXPECT_EQ(all, alone) << "block " << block << (mapped ? ", mapped" : "");
      EXPECT_EQ(all.rows, total);
      EXPECT_GT(all.loss_whole + all.loss_fraction, 0);
    }
  }
}

TEST(Evaluator, ShardsAreWholeBlocksThatTileThePositions) {
  for (std::int64_t total : {0, 1, 5, 157}) {
    for (std::int64_t block : {1, 4, 64}) {
      for (int world : {1, 2, 3, 7}) {
        std::int64_t next = 0;
        for (int r = 0; r < world; ++r) {
          const PositionRange s = eval_shard(total, block, r, world);
          ASSERT_EQ(s.begin, next);
          ASSERT_LE(s.begin, s.end);
          ASSERT_EQ(s.begin % block, 0);
          next = s.end;
        }
        ASSERT_EQ(next, total);
      }
    }
  }
}

TEST(Evaluator, LogitsReachTheCallbackWithTheirRows) {
  Fixture f;
  const MemorySource src = hand_rows();
  model::FullMLP m({2, 2, 1, 3}, 4, *f.ops);
  set_hand_weights(m);
  Evaluator ev(m, *f.ops, 4);
  std::vector<std::int64_t> seen;
  std::vector<float> first_logits;
  ev.run(
      src, 0, 6, [](std::int64_t p) { return 5 - p; },
      [&](const std::int64_t* rows, std::int64_t n, const float* logits) {
        for (std::int64_t i = 0; i < n; ++i) seen.push_back(rows[i]);
        if (first_logits.empty()) first_logits.assign(logits, logits + 3);
      });
  // Blocks of positions {0..3} -> rows {5, 4, 3, 2} read ascending, then {1, 0}.
  EXPECT_EQ(seen, (std::vector<std::int64_t>{2, 3, 4, 5, 0, 1}));
  EXPECT_EQ(first_logits, (std::vector<float>{0, 0, 0}));  // row 2: x = (-1, -1)
}

TEST(Evaluator, NanInputCountedApartAndWrongShapeRefused) {
  Fixture f;
  // x = (3e38, 0) gives logits (3e38, 0, 0): for label 1 a finite loss of 3e38, beyond the
  // fixed-point sums. x = (inf, 0) gives a NaN logit (inf * 0 in the last layer): a NaN loss. Both
  // are counted apart: the mean is NaN, and +inf without the NaN row.
  const float inf = std::numeric_limits<float>::infinity();
  MemorySource bad(2, 3, {3e38f, 0, inf, 0}, {1, 0});
  model::FullMLP m({2, 2, 1, 3}, 2, *f.ops);
  set_hand_weights(m);
  Evaluator ev(m, *f.ops, 2);
  EvalCounts c = ev.run(bad, 0, 2);
  EXPECT_EQ(c.rows, 2);
  EXPECT_EQ(c.loss_huge, 1);
  EXPECT_EQ(c.loss_nan, 1);
  EXPECT_TRUE(std::isnan(c.mean_loss()));
  c.loss_nan = 0;
  EXPECT_EQ(c.mean_loss(), inf);
  const MemorySource wide(3, 3, {0, 0, 0}, {0});
  EXPECT_THROW(ev.run(wide, 0, 1), core::UsageError);
}

}  // namespace
}  // namespace microddp::ddp
