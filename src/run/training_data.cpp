// training_data.cpp — the training rows, their epochs and the validation set of `train --data`.
#include "run/training_data.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "run/agreed_usage_error.hpp"
#include "run/run_control.hpp"
#include "core/error.hpp"

namespace microddp::run {

namespace {
// A check every rank makes on the same values: its failure is one message and exit 2 everywhere.
template <class F>
auto agreed(F&& make) {
  try {
    return make();
  } catch (const core::UsageError& e) {
    core::throw_usage_error(e.what(), /*agreed=*/true);
  }
}
}  // namespace

TrainingData::TrainingData(const DataOptions& o, const comm::MpiRuntime& mpi, const data::DataSource& file,
                           std::uint64_t seed, std::int64_t global_batch, std::int64_t accum_steps)
    : o_(o), file_(file), seed_(seed) {
  if (o.val_fraction > 0.0) {
    split_.emplace(agreed([&] { return data::TrainValSplit(file.rows(), o.val_fraction, seed); }));
    train_ = std::make_unique<data::SplitSource>(file, *split_, data::SplitSource::Side::Train, seed);
    val_ = std::make_unique<data::SplitSource>(file, *split_, data::SplitSource::Side::Val, seed);
  }
  if (!o.val_data.empty()) {
    val_file_ =
        open_data_file(mpi, o.val_data, file.classes(), "--val-data", o.keys, o.resident_limit_bytes).source;
    MDDP_AGREED_USAGE_CHECK(val_file_->in_dim() == file.in_dim() && val_file_->classes() == file.classes(),
                            "--val-data " << o.val_data << " has " << val_file_->in_dim() << " features and "
                                          << val_file_->classes() << " classes, the training file "
                                          << file.in_dim() << " and " << file.classes());
  }
  const std::int64_t rows = train_source().rows(), step_batch = global_batch * accum_steps;
  MDDP_AGREED_USAGE_CHECK(
      step_batch <= rows,
      "the global batch of " << step_batch << " rows is larger than the training set of " << rows << " rows"
                             << (accum_steps > 1 ? " (--global-batch " + std::to_string(global_batch) + " x --accum-steps " +
                                                       std::to_string(accum_steps) + ")"
                                                 : std::string())
                             << (split_ ? " after holding out " + std::to_string(split_->val_rows()) + " validation rows"
                                        : std::string())
                             << ": an epoch would hold no full batch (each epoch's partial last batch is dropped); use "
                                "--global-batch of at most "
                             << rows / accum_steps);
  epochs_.emplace(agreed([&] { return data::EpochSampler(rows, step_batch, seed, o.shuffle == "on"); }));
}

void TrainingData::check_files_unchanged(const comm::MpiRuntime& mpi) const {
  std::string error;
  try {
    file_.check_unchanged();
    if (val_file_ != nullptr) val_file_->check_unchanged();
  } catch (const core::UsageError& e) {
    error = e.what();
  }
  agree_on_usage_error(mpi, "the epoch's data file check", error,
                       "a data file changed on disk during the run (another rank saw it; see its message)");
}

void truncate_to_half(const std::string& path) {
  struct stat st {};
  MDDP_CHECK(::stat(path.c_str(), &st) == 0, path << ": " << std::strerror(errno));
  MDDP_CHECK(::truncate(path.c_str(), st.st_size / 2) == 0, "truncating " << path << ": " << std::strerror(errno));
}

const data::DataSource* TrainingData::val_source() const {
  if (val_ != nullptr) return val_.get();
  return val_file_.get();
}

bool TrainingData::eval_due(std::int64_t steps_done, std::int64_t total_steps) const {
  if (val_source() == nullptr) return false;
  if (steps_done == total_steps) return true;
  if (o_.eval_every > 0) return steps_done % o_.eval_every == 0;
  return o_.epochs > 0 && steps_done % epochs_->steps_per_epoch() == 0;
}

std::string TrainingData::train_line() const {
  char text[320];
  std::snprintf(text, sizeof text,
                "%" PRId64 " train rows%s, %s, %" PRId64 " steps per epoch of %" PRId64
                " rows, last %" PRId64 " rows of each epoch's order dropped",
                epochs_->train_rows(), split_ ? " (the rest after the validation split)" : "",
                epochs_->shuffle() ? "shuffled per epoch" : "file order every epoch (--shuffle off)",
                epochs_->steps_per_epoch(), epochs_->global_batch(), epochs_->dropped_per_epoch());
  return text;
}

std::string TrainingData::val_line() const {
  const data::DataSource* v = val_source();
  if (v == nullptr) return "none (--val-fraction F or --val-data FILE.h5)";
  char when[96] = "at the end";
  if (o_.eval_every > 0) {
    std::snprintf(when, sizeof when, "every %" PRId64 " steps and at the end", o_.eval_every);
  } else if (o_.epochs > 0) {
    std::snprintf(when, sizeof when, "at each epoch's end");
  }
  char text[512];
  if (split_) {
    std::snprintf(text, sizeof text, "%" PRId64 " rows held out of the file (--val-fraction %g, seed %llu); %s",
                  v->rows(), o_.val_fraction, static_cast<unsigned long long>(seed_), when);
  } else {
    std::snprintf(text, sizeof text, "%s, %" PRId64 " rows; %s", o_.val_data.c_str(), v->rows(), when);
  }
  return text;
}

}  // namespace microddp::run
