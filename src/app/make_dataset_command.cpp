// make_dataset_command.cpp — `microddp make-dataset`: write the synthetic teacher set to HDF5.
// All ranks write disjoint row ranges collectively (parallel HDF5); the file is published by
// rename like a checkpoint. `train --data FILE.h5 --seed S` then sees exactly the samples that
// synthetic training with seed S sees (while steps x global batch <= N), bit for bit.
// `make-dataset --from-idx IMAGES LABELS OUT.h5` instead imports an IDX pair (MNIST, Fashion-MNIST;
// io/idx_import.hpp), `--from-npy X.npy Y.npy OUT.h5` and `--from-npz FILE.npz OUT.h5` NumPy arrays
// (io/npy_import.hpp), and `--split --val-fraction F IN.h5 TRAIN.h5 VAL.h5` writes the split that
// `train --val-fraction F` holds out (io/dataset_split.hpp): rank 0 reads and writes, every rank
// reports its verdict (exit 2 on bad input). `--teacher-seed S` draws synthetic rows (of --seed)
// labelled by the teacher of seed S: held-out rows of the task `train --seed S` learns.
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "app/agreed_usage_error.hpp"
#include "app/command.hpp"
#include "core/error.hpp"
#include "io/hdf5_dataset.hpp"
#include "io/dataset_split.hpp"
#include "io/idx_import.hpp"
#include "io/npy_import.hpp"
#include "io/output_file.hpp"

namespace microddp::app {

namespace {

class MakeDatasetCommand final : public Command {
 public:
  explicit MakeDatasetCommand(CLI::App* sub) {
    sub->add_option("files", files_, "Output file OUT.h5 (with --split: IN.h5 TRAIN.h5 VAL.h5)")
        ->required()
        ->expected(1, 3)
        ->type_name("FILE.h5");
    sub->add_option("--samples", o_.samples, "Rows N")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
        ->capture_default_str();
    sub->add_option("--in-dim", o_.in_dim, "Features per row")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24))
        ->capture_default_str();
    classes_ = sub->add_option("--classes", o_.classes, "Label classes (with --from-idx: 10, labels 0..9)")
                   ->check(CLI::Range(std::int64_t{2}, std::int64_t{1} << 24))
                   ->capture_default_str();
    auto* seed = sub->add_option("--seed", o_.seed, "Seed of the generator (as train --seed)")->capture_default_str();
    from_idx_ = sub->add_option("--from-idx", idx_,
                                "Import an IDX pair instead (MNIST, Fashion-MNIST; plain or .gz): IMAGES LABELS; "
                                "pixels are scaled to p / 255")
                    ->expected(2)
                    ->allow_extra_args(false)
                    ->type_name("IMAGES LABELS");
    from_idx_->excludes(sub->get_option("--samples"))->excludes(sub->get_option("--in-dim"))->excludes(seed);
    teacher_ = sub->add_option("--teacher-seed", teacher_seed_,
                               "Label the rows with the teacher of this seed (the rows come from --seed): held-out "
                               "rows of the task `train --seed S` learns, for --val-data");
    from_npy_ = sub->add_option("--from-npy", npy_,
                                "Import NumPy arrays instead: X.npy (N, ...) float/uint8/int inputs, flattened per row; "
                                "Y.npy (N,) integer labels (docs/data_sets.md)")
                    ->expected(2)
                    ->allow_extra_args(false)
                    ->type_name("X.npy Y.npy");
    from_npz_ = sub->add_option("--from-npz", npz_, "Import the arrays --x-key and --y-key of a .npz archive instead")
                    ->type_name("FILE.npz");
    x_key_ = sub->add_option("--x-key", npy_opts_.x_key, "--from-npz: the inputs' array")->capture_default_str();
    y_key_ = sub->add_option("--y-key", npy_opts_.y_key, "--from-npz: the labels' array")->capture_default_str();
    split_ = sub->add_flag("--split", split_flag_,
                           "Write the split train --val-fraction F --seed S holds out: IN.h5 TRAIN.h5 VAL.h5");
    val_fraction_ = sub->add_option("--val-fraction", val_fraction_value_, "--split: the fraction held out, as train's")
                        ->check(CLI::Range(0.0, 1.0));
    seed_ = seed;
  }
  void validate() override {
    const int sources = static_cast<int>(from_idx_->count() > 0) + static_cast<int>(from_npy_->count() > 0) +
                        static_cast<int>(from_npz_->count() > 0) + static_cast<int>(split_->count() > 0);
    MDDP_USAGE_CHECK(sources <= 1, "give one of --from-idx, --from-npy, --from-npz and --split");
    const bool split = split_->count() > 0, synthetic = sources == 0;
    MDDP_USAGE_CHECK(files_.size() == (split ? 3u : 1u),
                     (split ? "--split writes IN.h5 TRAIN.h5 VAL.h5: give those three files"
                            : "give one output file (OUT.h5); three files are for --split IN.h5 TRAIN.h5 VAL.h5"));
    o_.path = files_.back();
    MDDP_USAGE_CHECK(split == (val_fraction_->count() > 0), "--split and --val-fraction go together");
    MDDP_USAGE_CHECK(synthetic || teacher_->count() == 0, "--teacher-seed draws synthetic rows: not with an import");
    MDDP_USAGE_CHECK(from_npz_->count() > 0 || (x_key_->count() == 0 && y_key_->count() == 0),
                     "--x-key and --y-key name the arrays of --from-npz");
    MDDP_USAGE_CHECK(synthetic || split || seed_->count() == 0, "--seed applies to the synthetic set and --split");
    MDDP_USAGE_CHECK(!split || classes_->count() == 0, "--split keeps IN's classes: leave --classes out");
    if (teacher_->count() > 0) o_.teacher_seed = teacher_seed_;
    std::vector<std::string> inputs = idx_;
    std::string option = "--from-idx";
    if (from_npy_->count() > 0) inputs = npy_, option = "--from-npy";
    if (from_npz_->count() > 0) inputs = {npz_}, option = "--from-npz";
    if (split) inputs = {files_[0]}, option = "--split";
    for (const auto& f : inputs) {
      struct stat st {};
      MDDP_USAGE_CHECK(::stat(f.c_str(), &st) == 0, option << " " << f << ": " << std::strerror(errno));
    }
    // Every output: never one of the inputs or a checkpoint, a file in a writable directory
    // (io/output_file.hpp); --split's two outputs two different files.
    const std::vector<std::string> outputs(files_.begin() + (split ? 1 : 0), files_.end());
    for (const auto& f : outputs) io::check_output_path(f, {"make-dataset's output", inputs});
    if (split) io::check_distinct_outputs(files_[1], files_[2], "--split's TRAIN.h5 and VAL.h5");
    if (synthetic) {
      // The file is written whole (no compression): refuse before writing what the disk cannot hold.
      const double bytes = static_cast<double>(o_.samples) * (4.0 * static_cast<double>(o_.in_dim) + 4.0);
      io::check_free_space(o_.path, bytes > 9e18 ? INT64_MAX : static_cast<std::int64_t>(bytes),
                           "make-dataset's output");
    }
  }
  int run(const comm::MpiRuntime& mpi) override {
    if (from_idx_->count() > 0) return run_import(mpi);
    if (from_npy_->count() > 0 || from_npz_->count() > 0) return run_npy_import(mpi);
    if (split_->count() > 0) return run_split(mpi);
    const double s = [&] {
      const auto watched = mpi.watch("make-dataset's MPI-IO write");
      return io::write_synthetic_dataset(mpi.world(), o_);
    }();
    if (mpi.rank() == 0) {
      std::printf("# wrote %s: /inputs (%" PRId64 ", %" PRId64 ") float32, /labels (%" PRId64 ",) int32, %" PRId64
                  " classes, seed %" PRIu64 "%s in %.3f s on %d ranks\n",
                  o_.path.c_str(), o_.samples, o_.in_dim, o_.samples, o_.classes, o_.seed,
                  o_.teacher_seed ? (", teacher of seed " + std::to_string(*o_.teacher_seed)).c_str() : "", s,
                  mpi.size());
    }
    return 0;
  }

 private:
  // Rank 0 imports; the others wait for its verdict, so bad input is one message and exit 2 on
  // every rank (an I/O failure on rank 0 aborts the job as any other error does).
  int run_import(const comm::MpiRuntime& mpi) {
    const io::IdxImportOptions io{idx_[0], idx_[1], o_.path, classes_->count() > 0 ? o_.classes : 10};
    run_on_rank0(mpi, "make-dataset --from-idx (rank 0 imports)", [&] {
      const io::IdxImportResult r = io::import_idx(io);
      std::printf("# wrote %s: /inputs (%" PRId64 ", %" PRId64 ") float32 = pixel / 255, /labels (%" PRId64
                  ",) int32, %" PRId64 " classes, in %.3f s\n#   from %s (%s images%s) and %s%s\n",
                  o_.path.c_str(), r.rows, r.in_dim, r.rows, r.classes, r.seconds, io.images.c_str(),
                  image_shape(r.image_dims).c_str(), r.images_gzip ? ", gzip" : "", io.labels.c_str(),
                  r.labels_gzip ? " (gzip)" : "");
      std::printf("#   label counts:");
      for (auto c : r.label_counts) std::printf(" %" PRId64, c);
      std::printf("\n");
      std::fflush(stdout);
    });
    return 0;
  }
  int run_npy_import(const comm::MpiRuntime& mpi) {
    npy_opts_.output = o_.path;
    if (from_npy_->count() > 0) {
      npy_opts_.x_path = npy_[0];
      npy_opts_.y_path = npy_[1];
    } else {
      npy_opts_.npz_path = npz_;
    }
    npy_opts_.classes = classes_->count() > 0 ? o_.classes : 0;
    run_on_rank0(mpi, "make-dataset --from-npy/--from-npz (rank 0 imports)", [&] {
      const io::NpyImportResult r = io::import_npy(npy_opts_);
      std::printf("# wrote %s: /inputs (%" PRId64 ", %" PRId64 ") float32 (rows %s; %s), /labels (%" PRId64
                  ",) int32, %" PRId64 " classes, in %.3f s\n#   from %s (%s) and %s (%s)\n#   label counts:",
                  o_.path.c_str(), r.rows, r.in_dim, r.row_shape.c_str(), r.scaling.c_str(), r.rows, r.classes,
                  r.seconds, r.x_source.c_str(), r.x_dtype.c_str(), r.y_source.c_str(), r.y_dtype.c_str());
      for (std::size_t c = 0; c < r.label_counts.size() && c < 32; ++c) std::printf(" %" PRId64, r.label_counts[c]);
      std::printf("%s\n", r.label_counts.size() > 32 ? " ..." : "");
      std::fflush(stdout);
    });
    return 0;
  }
  int run_split(const comm::MpiRuntime& mpi) {
    const io::SplitOptions so{files_[0], files_[1], files_[2], val_fraction_value_, o_.seed};
    run_on_rank0(mpi, "make-dataset --split (rank 0 writes)", [&] {
      const io::SplitResult r = io::write_split(so);
      std::printf("# wrote %s (%" PRId64 " rows) and %s (%" PRId64 " rows held out): the split train "
                  "--val-fraction %g --seed %" PRIu64 " makes of %s's %" PRId64 " rows, in %.3f s\n",
                  so.train_output.c_str(), r.train_rows, so.val_output.c_str(), r.val_rows, so.val_fraction, so.seed,
                  so.input.c_str(), r.rows, r.seconds);
      std::fflush(stdout);
    });
    return 0;
  }
  static std::string image_shape(const std::vector<std::int64_t>& dims) {
    std::string s;
    for (auto d : dims) {
      if (!s.empty()) s += 'x';
      s += std::to_string(d);
    }
    return s;
  }

  io::MakeDatasetOptions o_{"", 4096, 128, 2, 1, {}};
  std::vector<std::string> files_;  // OUT.h5, or IN.h5 TRAIN.h5 VAL.h5 (--split)
  std::vector<std::string> idx_, npy_;
  std::string npz_;
  io::NpyImportOptions npy_opts_;
  std::uint64_t teacher_seed_ = 1;
  double val_fraction_value_ = 0.0;
  bool split_flag_ = false;
  CLI::Option* classes_ = nullptr;
  CLI::Option* from_idx_ = nullptr;
  CLI::Option* from_npy_ = nullptr;
  CLI::Option* from_npz_ = nullptr;
  CLI::Option* x_key_ = nullptr;
  CLI::Option* y_key_ = nullptr;
  CLI::Option* split_ = nullptr;
  CLI::Option* val_fraction_ = nullptr;
  CLI::Option* teacher_ = nullptr;
  CLI::Option* seed_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> register_make_dataset(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("make-dataset",
                              "Write the synthetic data set, import an IDX pair (--from-idx) or NumPy arrays "
                              "(--from-npy, --from-npz), or split a file (--split), to HDF5 (/inputs, /labels) for "
                              "train --data");
  return std::make_unique<MakeDatasetCommand>(sub);
}

}  // namespace microddp::app
