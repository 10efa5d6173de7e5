// training_data.cpp — the training rows, their epochs and the validation set of `train --data`.
#include "app/training_data.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "app/agreed_usage_error.hpp"
#include "app/run_control.hpp"
#include "core/error.hpp"

namespace microddp::app {

void add_data_options(CLI::App* sub, DataOptions& o) {
  o.shuffle_opt = sub->add_option("--shuffle", o.shuffle,
                                  "With --data: on = a new seeded order of the training rows every epoch, off = file "
                                  "order (both drop each epoch's partial last batch)")
                      ->check(CLI::IsMember({"on", "off"}))
                      ->capture_default_str();
  sub->add_option("--epochs", o.epochs,
                  "With --data: train E epochs (E x steps per epoch) instead of --steps (not both)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
  sub->add_option("--val-fraction", o.val_fraction,
                  "With --data: hold out this fraction of its rows (seeded, the same at any world size) as the "
                  "validation set")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--val-data", o.val_data, "With --data: the validation set is this HDF5 file");
  sub->add_option("--eval-every", o.eval_every,
                  "Evaluate the validation set every N steps and at the end (default: at each epoch's end with "
                  "--epochs, else only at the end)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
}

void validate_data_options(const DataOptions& o, const std::string& data_path) {
  const bool epochs = o.epochs > 0, val = o.val_fraction > 0.0 || !o.val_data.empty();
  if (data_path.empty()) {
    MDDP_USAGE_CHECK(!epochs && !val && o.eval_every == 0 && (o.shuffle_opt == nullptr || o.shuffle_opt->count() == 0),
                     "--shuffle, --epochs, --val-fraction, --val-data and --eval-every need --data FILE.h5 (the "
                     "synthetic set is an endless stream: it has no epochs and no held-out rows)");
  }
  MDDP_USAGE_CHECK(!(epochs && o.steps_opt != nullptr && o.steps_opt->count() > 0),
                   "give --epochs or --steps, not both (--epochs E runs E x steps per epoch steps)");
  MDDP_USAGE_CHECK(!(o.val_fraction > 0.0 && !o.val_data.empty()),
                   "give --val-fraction or --val-data, not both: one validation set");
  MDDP_USAGE_CHECK(std::isfinite(o.val_fraction) && o.val_fraction >= 0.0 && o.val_fraction < 1.0,
                   "--val-fraction must lie in [0, 1), got " << o.val_fraction);
  MDDP_USAGE_CHECK(o.eval_every == 0 || val, "--eval-every needs a validation set (--val-fraction or --val-data)");
}

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
    val_file_ = open_data_file(mpi, o.val_data, file.classes(), "--val-data", o.keys, o.resident_limit_bytes);
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

}  // namespace microddp::app
