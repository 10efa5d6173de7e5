// run_options.cpp — the command-line side of a training run: options and their checks before MPI.
#include "app/run_options.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "app/cli_values.hpp"
#include "core/error.hpp"
#include "run/allow_changed.hpp"

namespace microddp::app {

void add_run_control_options(CLI::App* sub, run::RunControlOptions& o) {
  sub->add_option("--data", o.data_path,
                  "Train from an HDF5 data set (microddp make-dataset) instead of the synthetic one");
  sub->add_option("--inputs-key", o.keys.inputs, "The dataset of the inputs in --data and --val-data")
      ->capture_default_str();
  sub->add_option("--labels-key", o.keys.labels, "The dataset of the labels in --data and --val-data")
      ->capture_default_str();
  sub->add_option("--data-memory-mb", o.data_memory_mb,
                  "--data and --val-data files whose rows (as float32, labels int32) fit in this many MiB are read "
                  "into memory once; larger ones are streamed from disk, rows as they are needed (0 = always stream)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 30))
      ->capture_default_str();
  sub->add_option("--checkpoint-every", o.checkpoint_every,
                  "Save a checkpoint every N steps and at the end (0 = only on SIGTERM/SIGUSR1)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40))
      ->capture_default_str();
  sub->add_option("--checkpoint-dir", o.checkpoint_dir, "Directory of the checkpoints (shared by all ranks)")
      ->capture_default_str();
  sub->add_option("--keep", o.keep, "Keep the newest K checkpoints (0 = all); the newest valid one is never deleted")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  sub->add_option("--resume", o.resume,
                  "auto (the newest valid checkpoint in --checkpoint-dir; one that does not fit this run is refused, "
                  "none at all: start fresh), never (default: start fresh), or a checkpoint FILE");
  sub->add_flag("--overwrite", o.overwrite,
                "Start over in a --checkpoint-dir that holds another run's checkpoints: delete them (and its best.h5) "
                "first (with --resume never)");
  sub->add_option("--allow-changed", o.allow_changed,
                  "Resume with these settings changed (only the learning-rate plan: lr, lr-schedule, warmup-steps, "
                  "min-lr, decay-steps, lr-milestones, lr-gamma; steps/epochs are always free): e.g. lr,lr-schedule");
  sub->add_option("--init-from", o.init_from,
                  "Start a new run from the weights of a checkpoint or an exported model (fresh optimizer state, "
                  "this run's settings; the shapes must match). Ignored when --resume auto finds this run's checkpoint");
  sub->add_option(
         "--checkpoint-writer", o.writer,
         "rank0 (faster on one node, measured) | parallel (all ranks write disjoint slices with collective MPI-IO)")
      ->check(CLI::IsMember({"parallel", "rank0"}))
      ->capture_default_str();
}

void validate_run_control_options(const run::RunControlOptions& o) {
  MDDP_USAGE_CHECK(!o.checkpoint_dir.empty(), "--checkpoint-dir must not be empty");
  const bool fresh = o.resume.empty() || o.resume == "never";
  MDDP_USAGE_CHECK(!o.overwrite || fresh, "--overwrite starts the run over: give it with --resume never, not --resume "
                                              << o.resume << " (which continues a run)");
  MDDP_USAGE_CHECK(o.allow_changed.empty() || !fresh,
                   "--allow-changed applies to a resume: give it with --resume auto or --resume FILE");
  (void)run::parse_allow_changed(o.allow_changed.empty() ? "steps" : o.allow_changed);  // the names, before MPI
  MDDP_USAGE_CHECK(o.init_from.empty() || fresh || o.resume == "auto",
                   "--init-from starts a new run: not with --resume " << o.resume << " (give one of the two)");
  if (!o.init_from.empty()) {
    struct stat st {};
    MDDP_USAGE_CHECK(::stat(o.init_from.c_str(), &st) == 0 && S_ISREG(st.st_mode),
                     "--init-from " << o.init_from << ": no such file (a checkpoint or a `microddp export` model)");
  }
  if (!fresh && o.resume != "auto") {
    struct stat st {};
    MDDP_USAGE_CHECK(
        ::stat(o.resume.c_str(), &st) == 0 && S_ISREG(st.st_mode),
        "--resume " << o.resume
                    << ": no such checkpoint file (use --resume auto to pick the newest in --checkpoint-dir)");
  }
  if (!o.data_path.empty()) {
    struct stat st {};
    MDDP_USAGE_CHECK(::stat(o.data_path.c_str(), &st) == 0, "--data " << o.data_path << ": " << std::strerror(errno));
  }
}

CLI::Option* add_data_options(CLI::App* sub, run::DataOptions& o) {
  CLI::Option* shuffle = sub->add_option("--shuffle", o.shuffle,
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
  return shuffle;
}

void validate_data_options(const run::DataOptions& o, const std::string& data_path, bool steps_given,
                           bool shuffle_given) {
  const bool epochs = o.epochs > 0, val = o.val_fraction > 0.0 || !o.val_data.empty();
  if (data_path.empty()) {
    MDDP_USAGE_CHECK(!epochs && !val && o.eval_every == 0 && !shuffle_given,
                     "--shuffle, --epochs, --val-fraction, --val-data and --eval-every need --data FILE.h5 (the "
                     "synthetic set is an endless stream: it has no epochs and no held-out rows)");
  }
  MDDP_USAGE_CHECK(!(epochs && steps_given),
                   "give --epochs or --steps, not both (--epochs E runs E x steps per epoch steps)");
  MDDP_USAGE_CHECK(!(o.val_fraction > 0.0 && !o.val_data.empty()),
                   "give --val-fraction or --val-data, not both: one validation set");
  MDDP_USAGE_CHECK(std::isfinite(o.val_fraction) && o.val_fraction >= 0.0 && o.val_fraction < 1.0,
                   "--val-fraction must lie in [0, 1), got " << o.val_fraction);
  MDDP_USAGE_CHECK(o.eval_every == 0 || val, "--eval-every needs a validation set (--val-fraction or --val-data)");
}

void add_best_model_options(CLI::App* sub, run::BestModelOptions& o) {
  sub->add_option("--save-best", o.save_best,
                  "Keep the model of the best validation so far as best.h5 in --checkpoint-dir (a checkpoint, never "
                  "rotated away): val_loss (lowest) or val_accuracy (highest)")
      ->check(CLI::IsMember({"val_loss", "val_accuracy"}));
  sub->add_option("--early-stop-patience", o.patience,
                  "Stop (exit 0) after K evaluations without improvement of the --save-best metric (val_loss "
                  "without --save-best)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  sub->add_option("--early-stop-min-delta", o.min_delta,
                  "An improvement must beat the best by more than this (default 0: any improvement)")
      ->check(finite_range(0.0, 1e30))
      ->capture_default_str();
}

void validate_best_model_options(const run::BestModelOptions& o, bool has_validation) {
  MDDP_USAGE_CHECK(has_validation || (o.save_best.empty() && o.patience == 0),
                   (o.save_best.empty() ? "--early-stop-patience" : "--save-best")
                       << " needs a validation set: --val-fraction F or --val-data FILE (with --data)");
  MDDP_USAGE_CHECK(o.min_delta == 0.0 || o.patience > 0, "--early-stop-min-delta needs --early-stop-patience");
}

}  // namespace microddp::app
