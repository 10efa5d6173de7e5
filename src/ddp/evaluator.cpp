// evaluator.cpp — blocks of rows through the model's forward, counted on the host in fixed point.
#include "ddp/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/tensor_view.hpp"

namespace microddp::ddp {

namespace {
constexpr int kFractionBits = 32;           // loss fraction units: 2^-32
constexpr double kHugeLoss = 2147483648.0;  // 2^31: whole parts sum without overflow
constexpr int kCountFields = 6;             // rows .. loss_huge, before the matrix
const double kFractionScale = std::ldexp(1.0, kFractionBits);
}  // namespace

EvalCounts::EvalCounts(std::int64_t c) : classes(c), confusion(static_cast<std::size_t>(c * c), 0) {
  MDDP_CHECK(c >= 1, "an evaluation needs at least one class, got " << c);
}

double EvalCounts::loss_sum() const {
  if (loss_nan > 0) return std::numeric_limits<double>::quiet_NaN();
  if (loss_huge > 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(loss_whole) + std::ldexp(static_cast<double>(loss_fraction), -kFractionBits);
}

double EvalCounts::mean_loss() const {
  return rows > 0 ? loss_sum() / static_cast<double>(rows) : std::numeric_limits<double>::quiet_NaN();
}

double EvalCounts::accuracy() const {
  return rows > 0 ? static_cast<double>(correct) / static_cast<double>(rows) : std::numeric_limits<double>::quiet_NaN();
}

std::int64_t EvalCounts::class_rows(std::int64_t c) const {
  std::int64_t n = 0;
  for (std::int64_t p = 0; p < classes; ++p) n += confusion[static_cast<std::size_t>(c * classes + p)];
  return n;
}

std::int64_t EvalCounts::class_correct(std::int64_t c) const {
  return confusion[static_cast<std::size_t>(c * classes + c)];
}

double EvalCounts::class_accuracy(std::int64_t c) const {
  const std::int64_t n = class_rows(c);
  return n > 0 ? static_cast<double>(class_correct(c)) / static_cast<double>(n)
               : std::numeric_limits<double>::quiet_NaN();
}

void EvalCounts::add(const EvalCounts& o) {
  MDDP_CHECK(o.classes == classes, "adding counts of " << o.classes << " classes to counts of " << classes);
  rows += o.rows;
  correct += o.correct;
  loss_whole += o.loss_whole;
  loss_fraction += o.loss_fraction;
  loss_nan += o.loss_nan;
  loss_huge += o.loss_huge;
  for (std::size_t i = 0; i < confusion.size(); ++i) confusion[i] += o.confusion[i];
}

PositionRange eval_shard(std::int64_t total, std::int64_t block_rows, int rank, int world_size) {
  MDDP_CHECK(total >= 0 && block_rows >= 1 && world_size >= 1 && rank >= 0 && rank < world_size,
             "eval_shard(" << total << ", " << block_rows << ", " << rank << ", " << world_size << ")");
  const std::int64_t blocks = (total + block_rows - 1) / block_rows;
  const std::int64_t b0 = blocks * rank / world_size, b1 = blocks * (rank + 1) / world_size;
  return {std::min(total, b0 * block_rows), std::min(total, b1 * block_rows)};
}

Evaluator::Evaluator(model::FullMLP& model, kernels::Ops& ops, std::int64_t block_rows)
    : model_(model),
      ops_(ops),
      block_(block_rows),
      labels_(static_cast<std::size_t>(block_rows)),
      rows_(static_cast<std::size_t>(block_rows)) {
  MDDP_CHECK(block_rows >= 1, "an evaluation block needs at least one row, got " << block_rows);
  MDDP_CHECK(ops.device() == model.device(), "the evaluator's Ops and the model are on different devices");
  if (model.device() != core::Device::Host) {
    // Inputs go up from (pinned) staging, logits come back to it; on the CPU both are the model's own.
    x_stage_ = kernels::OpsHostBuffer<float>(ops, block_rows * model.config().in_dim);
    logits_ = kernels::OpsHostBuffer<float>(ops, block_rows * model.config().classes);
  }
}

EvalCounts Evaluator::run(const data::DataSource& source, std::int64_t begin, std::int64_t end, const RowMap& row_of,
                          const LogitsFn& on_logits) {
  const model::MlpConfig& m = model_.config();
  MDDP_USAGE_CHECK(source.in_dim() == m.in_dim && source.classes() == m.classes,
                   source.describe() << " has " << source.in_dim() << " features and " << source.classes()
                                     << " classes, the model " << m.in_dim << " and " << m.classes);
  MDDP_CHECK(begin >= 0 && begin <= end && begin % block_ == 0,
             "evaluation range [" << begin << ", " << end << ") does not start at a block of " << block_);
  EvalCounts counts(m.classes);
  for (std::int64_t p = begin; p < end; p += block_) {
    run_block(source, p, std::min(block_, end - p), row_of, on_logits, counts);
  }
  return counts;
}

void Evaluator::run_block(const data::DataSource& source, std::int64_t begin, std::int64_t count, const RowMap& row_of,
                          const LogitsFn& on_logits, EvalCounts& counts) {
  const std::int64_t in_dim = model_.config().in_dim, classes = model_.config().classes;
  const bool on_host = model_.device() == core::Device::Host;
  float* x = on_host ? model_.input() : x_stage_.data();
  std::int64_t* rows = rows_.data();
  for (std::int64_t i = 0; i < count; ++i) rows[i] = row_of ? row_of(begin + i) : begin + i;
  if (row_of) std::sort(rows, rows + count);
  // Consecutive rows in one fill: a file is read in as few hyperslabs as the map allows.
  for (std::int64_t i = 0; i < count;) {
    std::int64_t j = i + 1;
    while (j < count && rows[j] == rows[j - 1] + 1) ++j;
    source.fill(rows[i], j - i, x + i * in_dim, labels_.data() + i);
    i = j;
  }
  const float* logits = nullptr;
  if (on_host) {
    logits = model_.forward(x, count);
  } else {
    ops_.copy_from_host(model_.input(), x, static_cast<std::size_t>(count * in_dim) * sizeof(float));
    const float* device_logits = model_.forward(model_.input(), count);
    ops_.copy_to_host(logits_.data(), device_logits, static_cast<std::size_t>(count * classes) * sizeof(float));
    logits = logits_.data();
  }
  for (std::int64_t i = 0; i < count; ++i) {
    const float* z = logits + i * classes;
    const std::int32_t label = labels_[static_cast<std::size_t>(i)];
    MDDP_CHECK(label >= 0 && label < classes,
               "label " << label << " of row " << rows[i] << " outside [0, " << classes << ")");
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < classes; ++c) {
      if (z[c] > z[best]) best = c;
    }
    double zmax = z[best];
    if (!std::isfinite(zmax)) zmax = 0.0;  // NaN/inf logits: the loss below comes out non-finite
    double sum = 0.0;
    for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c]) - zmax);
    const double loss = std::log(sum) + zmax - static_cast<double>(z[label]);
    ++counts.rows;
    if (best == label) ++counts.correct;
    ++counts.confusion[static_cast<std::size_t>(label * classes + best)];
    if (std::isnan(loss)) {
      ++counts.loss_nan;
    } else if (!(loss < kHugeLoss)) {
      ++counts.loss_huge;
    } else {
      // loss >= 0 mathematically; a rounding below 0 (a single class) is clamped.
      const double l = std::max(loss, 0.0), whole = std::floor(l);
      counts.loss_whole += static_cast<std::int64_t>(whole);
      counts.loss_fraction += static_cast<std::int64_t>(std::llround((l - whole) * kFractionScale));
    }
  }
  if (on_logits) on_logits(rows, count, logits);
}

EvalCounts all_reduce_counts(comm::Communicator& comm, const EvalCounts& local) {
  std::vector<std::int64_t> buf = {local.rows,          local.correct,  local.loss_whole,
                                   local.loss_fraction, local.loss_nan, local.loss_huge};
  buf.insert(buf.end(), local.confusion.begin(), local.confusion.end());
  static_assert(kCountFields == 6);
  comm.all_reduce(core::TensorView::of(buf.data(), static_cast<std::int64_t>(buf.size())), core::ReduceOp::Sum).wait();
  EvalCounts out(local.classes);
  out.rows = buf[0];
  out.correct = buf[1];
  out.loss_whole = buf[2];
  out.loss_fraction = buf[3];
  out.loss_nan = buf[4];
  out.loss_huge = buf[5];
  std::copy(buf.begin() + kCountFields, buf.end(), out.confusion.begin());
  return out;
}

EvalCounts evaluate(comm::Communicator& comm, Evaluator& evaluator, const data::DataSource& source, std::int64_t total,
                    const Evaluator::RowMap& row_of, const Evaluator::LogitsFn& on_logits) {
  const PositionRange mine = eval_shard(total, evaluator.block_rows(), comm.rank(), comm.size());
  return all_reduce_counts(comm, evaluator.run(source, mine.begin, mine.end, row_of, on_logits));
}

}  // namespace microddp::ddp
