// evaluator.hpp — forward-only evaluation of a model on rows of a data source: loss, accuracy,
// per-class accuracy and the confusion matrix, data-parallel (`microddp evaluate`, and later
// `train --eval-every` on a validation set).
//
// Contract:
//   * Everything an evaluation produces is an integer count (EvalCounts), so adding the counts of
//     any split of the rows, in any order, gives the same bits: the all-reduced result is identical
//     at every world size. The loss of a row is computed in double from the float32 logits,
//     log(sum_j exp(z_j - max z)) + max z - z_label (>= 0), and summed in fixed point: its whole
//     part and its fraction in units of 2^-32 (2.3e-10, far below float32's resolution of the
//     logits) in two int64 sums, exact for up to 2^31 rows of loss < 2^31 each. A row whose loss is
//     NaN, infinite or >= 2^31 is counted apart and makes the mean loss NaN / infinite.
//   * The prediction is the first index of the largest logit (numpy's argmax, torch.argmax).
//   * The rows are positions [0, total) of an order: the source's rows themselves, or any map
//     position -> row (a validation split's val_row). Positions are cut into blocks of block_rows
//     (the last may be shorter) and every block is one forward of exactly its rows, so each row's
//     logits are computed the same way at every world size (a GEMM's rounding may depend on its
//     row count); eval_shard() gives a rank a contiguous run of whole blocks.
//   * Within a block the rows are read in ascending order (consecutive rows in one fill(), so a
//     file is read in as few slices as the map allows); counts do not depend on the order.
//   * The model's buffers must hold block_rows rows (FullMLP max_rows >= block_rows). Nothing is
//     allocated per block: staging for inputs, labels, logits and rows is sized in the constructor.
//     The model's device may be the CPU or a GPU (inputs go up and logits come back through the
//     Ops's copies).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "comm/communicator.hpp"
#include "data/data_source.hpp"
#include "kernels/ops_buffer.hpp"
#include "model/mlp.hpp"

namespace microddp::ddp {

struct EvalCounts {
  EvalCounts() = default;
  explicit EvalCounts(std::int64_t classes);

  std::int64_t classes = 0;
  std::int64_t rows = 0;
  std::int64_t correct = 0;
  std::int64_t loss_whole = 0;          // sum over rows of floor(loss)
  std::int64_t loss_fraction = 0;       // sum over rows of round((loss - floor(loss)) * 2^32)
  std::int64_t loss_nan = 0;            // rows whose loss is NaN (not in the sums)
  std::int64_t loss_huge = 0;           // rows whose loss is infinite or >= 2^31 (not in the sums)
  std::vector<std::int64_t> confusion;  // (classes, classes) row-major: [true label][prediction]

  // Sum of the row losses (exact sums, one rounding to double); NaN / +inf as the counts above say.
  double loss_sum() const;
  double mean_loss() const;                          // loss_sum() / rows; NaN without rows
  double accuracy() const;                           // correct / rows; NaN without rows
  std::int64_t class_rows(std::int64_t c) const;     // rows whose label is c
  std::int64_t class_correct(std::int64_t c) const;  // ... predicted as c
  double class_accuracy(std::int64_t c) const;       // NaN for a class without rows

  void add(const EvalCounts& other);
  bool operator==(const EvalCounts&) const = default;
};

// Positions [begin, end) of `total` that `rank` of `world_size` evaluates: whole blocks of
// block_rows, blocks split as evenly as possible in rank order (rank r gets blocks
// [nb r / n, nb (r+1) / n) of the nb = ceil(total / block_rows) blocks); empty for surplus ranks.
struct PositionRange {
  std::int64_t begin = 0, end = 0;
};
PositionRange eval_shard(std::int64_t total, std::int64_t block_rows, int rank, int world_size);

class Evaluator {
 public:
  // Position -> row of the source (empty: the position itself).
  using RowMap = std::function<std::int64_t(std::int64_t)>;
  // Called once per block with its rows (ascending) and their logits (count, classes) on the host.
  using LogitsFn = std::function<void(const std::int64_t* rows, std::int64_t count, const float* logits)>;

  // `ops`: the Ops the model computes with (its copies move inputs and logits on a GPU).
  Evaluator(model::FullMLP& model, kernels::Ops& ops, std::int64_t block_rows);

  std::int64_t block_rows() const { return block_; }

  // This process's counts over positions [begin, end) (begin a multiple of block_rows). The
  // source must have the model's in_dim and classes (core::UsageError otherwise).
  EvalCounts run(const data::DataSource& source, std::int64_t begin, std::int64_t end, const RowMap& row_of = {},
                 const LogitsFn& on_logits = {});

 private:
  void run_block(const data::DataSource& source, std::int64_t begin, std::int64_t count, const RowMap& row_of,
                 const LogitsFn& on_logits, EvalCounts& counts);

  model::FullMLP& model_;
  kernels::Ops& ops_;
  std::int64_t block_;
  kernels::OpsHostBuffer<float> x_stage_;  // (block, in_dim): staging when the model is on a GPU
  kernels::OpsHostBuffer<float> logits_;   // (block, classes): logits copied back from a GPU
  std::vector<std::int32_t> labels_;       // (block,)
  std::vector<std::int64_t> rows_;         // (block,)
};

// Collective: the sum of every rank's counts (one int64 all-reduce of 6 + classes^2 values).
EvalCounts all_reduce_counts(comm::Communicator& comm, const EvalCounts& local);

// Collective: the data-parallel evaluation of positions [0, total): this rank's eval_shard(),
// run(), all_reduce_counts(). Identical on every rank and at every world size.
EvalCounts evaluate(comm::Communicator& comm, Evaluator& evaluator, const data::DataSource& source, std::int64_t total,
                    const Evaluator::RowMap& row_of = {}, const Evaluator::LogitsFn& on_logits = {});

}  // namespace microddp::ddp
