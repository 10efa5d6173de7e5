// make_dataset_command.cpp — `microddp make-dataset`: write the synthetic teacher set to HDF5.
// All ranks write disjoint row ranges collectively (parallel HDF5); the file is published by
// rename like a checkpoint. `train --data FILE.h5 --seed S` then sees exactly the samples that
// synthetic training with seed S sees (while steps x global batch <= N), bit for bit.
// `make-dataset --from-idx IMAGES LABELS OUT.h5` instead imports an IDX pair (MNIST, Fashion-MNIST;
// io/idx_import.hpp): rank 0 reads and writes, every rank reports its verdict (exit 2 on bad input).
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "app/agreed_usage_error.hpp"
#include "app/command.hpp"
#include "core/error.hpp"
#include "io/hdf5_dataset.hpp"
#include "io/idx_import.hpp"

namespace microddp::app {

namespace {

class MakeDatasetCommand final : public Command {
 public:
  explicit MakeDatasetCommand(CLI::App* sub) {
    sub->add_option("output", o_.path, "Output file (FILE.h5)")->required();
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
  }
  void validate() override {
    if (from_idx_->count() == 0) return;
    for (const auto& f : idx_) {
      struct stat st {};
      MDDP_USAGE_CHECK(::stat(f.c_str(), &st) == 0, "--from-idx " << f << ": " << std::strerror(errno));
    }
  }
  int run(const comm::MpiRuntime& mpi) override {
    if (from_idx_->count() > 0) return run_import(mpi);
    const double s = [&] {
      const auto watched = mpi.watch("make-dataset's MPI-IO write");
      return io::write_synthetic_dataset(mpi.world(), o_);
    }();
    if (mpi.rank() == 0) {
      std::printf("# wrote %s: /inputs (%" PRId64 ", %" PRId64 ") float32, /labels (%" PRId64 ",) int32, %" PRId64
                  " classes, seed %" PRIu64 " in %.3f s on %d ranks\n",
                  o_.path.c_str(), o_.samples, o_.in_dim, o_.samples, o_.classes, o_.seed, s, mpi.size());
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
  static std::string image_shape(const std::vector<std::int64_t>& dims) {
    std::string s;
    for (auto d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
    return s;
  }

  io::MakeDatasetOptions o_{"", 4096, 128, 2, 1};
  std::vector<std::string> idx_;
  CLI::Option* classes_ = nullptr;
  CLI::Option* from_idx_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> register_make_dataset(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("make-dataset",
                              "Write the synthetic data set, or import an IDX pair (--from-idx), to HDF5 (/inputs, "
                              "/labels) for train --data");
  return std::make_unique<MakeDatasetCommand>(sub);
}

}  // namespace microddp::app
