// training_data.hpp — what `train --data` reads and how: the training rows (the whole file, or the
// training side of a --val-fraction split), their epochs (--shuffle, --epochs; data/epoch_sampler.hpp)
// and the validation set (--val-fraction or --val-data) with when to evaluate it (--eval-every).
// docs/data_sets.md has the rules; this file only puts the library's pieces together for a run.
//
// Contract: everything here is a pure function of (options, file sizes, seed, global batch,
// accumulation), never of the rank or the world size, so every rank builds the same epochs and
// the same split and a run resumes on any number of ranks. Bad combinations are core::UsageError
// before MPI starts (validate_data_options) or agreed ones after it (every rank reaches the same
// verdict from the same file sizes): exit 2 on every rank.
// Without --data nothing here applies: the synthetic set stays an endless stream indexed by global
// sample number, exactly as before epochs existed.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "comm/runtime/mpi_runtime.hpp"
#include "data/data_source.hpp"
#include "data/epoch_sampler.hpp"
#include "data/split_source.hpp"
#include "data/train_val_split.hpp"
#include "io/hdf5_data_source.hpp"

namespace microddp::app {

// The data's test hook (core/fault_plan.hpp; armed by MICRODDP_FAULT_TRUNCATE_DATA=RANK:STEP,
// app/fault_env.hpp): after step STEP (1-based), rank RANK truncates the --data file to half its
// size, as `truncate -s` from outside would, so a test changes a file under a running job at a
// known step.
inline constexpr std::string_view kTruncateDataPoint = "truncate_data";
void truncate_to_half(const std::string& path);

struct DataOptions {
  std::string shuffle = "on";  // --shuffle on|off (with --data)
  std::int64_t epochs = 0;     // --epochs E (0: --steps decides the run's length)
  double val_fraction = 0.0;   // --val-fraction F: hold out round(F N) rows of --data
  std::string val_data;        // --val-data FILE.h5
  std::int64_t eval_every = 0; // --eval-every N steps (0: each epoch's end with --epochs, else the run's end)
  CLI::Option* steps_opt = nullptr;  // --steps, to refuse it next to --epochs
  CLI::Option* shuffle_opt = nullptr;
  io::DataKeys keys;                 // the dataset names (--inputs-key, --labels-key): --val-data's too
  std::int64_t resident_limit_bytes = io::Hdf5DataSource::kResidentLimitBytes;  // --data-memory-mb, --val-data's too
};

// --shuffle --epochs --val-fraction --val-data --eval-every (train only).
void add_data_options(CLI::App* sub, DataOptions& o);
// Combinations, before MPI starts: the options need --data, --epochs excludes --steps, one
// validation set at most, --eval-every needs one.
void validate_data_options(const DataOptions& o, const std::string& data_path);

class TrainingData {
 public:
  // Collective. `file`: the opened --data source (must outlive this); its rows are split by
  // --val-fraction with the run's seed; --val-data is opened here (it must have the file's
  // in_dim and classes). An optimizer step reads accum_steps x global_batch rows; more than the
  // training rows is an agreed core::UsageError.
  TrainingData(const DataOptions& o, const comm::MpiRuntime& mpi, const data::DataSource& file, std::uint64_t seed,
               std::int64_t global_batch, std::int64_t accum_steps);

  // What the trainer reads, in the epochs of epochs().
  const data::DataSource& train_source() const { return train_ != nullptr ? *train_ : file_; }
  const data::EpochSampler& epochs() const { return *epochs_; }
  // The validation set, or nullptr.
  const data::DataSource* val_source() const;
  // --epochs E as steps (0 without --epochs).
  std::int64_t epoch_steps() const { return o_.epochs * epochs_->steps_per_epoch(); }
  // The 1-based epoch that global step `steps_done` (1-based, as printed) belongs to.
  std::int64_t epoch_of_step(std::int64_t steps_done) const { return epochs_->epoch_of(steps_done - 1) + 1; }
  // Whether to evaluate after `steps_done` of `total_steps` (a validation set exists).
  bool eval_due(std::int64_t steps_done, std::int64_t total_steps) const;
  // For the header: "500 train rows, shuffled per epoch, 7 steps per epoch, last 52 rows of each
  // epoch's order dropped" and "validation: 50 rows held out of FILE (--val-fraction 0.1); at each epoch's end".
  std::string train_line() const;
  // Collective, at each epoch's end (step_ends_epoch): every rank checks that the --data and
  // --val-data files are the ones it opened (DataSource::check_unchanged); a change on any rank is
  // a core::UsageError on every rank (agreed where every rank saw it: exit 2, no abort).
  bool step_ends_epoch(std::int64_t steps_done) const { return steps_done % epochs_->steps_per_epoch() == 0; }
  void check_files_unchanged(const comm::MpiRuntime& mpi) const;
  std::string val_line() const;

 private:
  DataOptions o_;
  const data::DataSource& file_;
  std::uint64_t seed_;
  std::optional<data::TrainValSplit> split_;
  std::unique_ptr<data::SplitSource> train_, val_;  // the split's sides (with --val-fraction)
  std::unique_ptr<data::DataSource> val_file_;      // --val-data
  std::optional<data::EpochSampler> epochs_;  // always set by the constructor
};

}  // namespace microddp::app
