// make_dataset_command.cpp — `microddp make-dataset`: write the synthetic teacher set to HDF5.
// All ranks write disjoint row ranges collectively (parallel HDF5); the file is published by
// rename like a checkpoint. `train --data FILE.h5 --seed S` then sees exactly the samples that
// synthetic training with seed S sees (while steps x global batch <= N), bit for bit.
#include <cinttypes>
#include <cstdio>

#include "app/command.hpp"
#include "core/error.hpp"
#include "io/hdf5_dataset.hpp"

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
    sub->add_option("--classes", o_.classes, "Label classes")
        ->check(CLI::Range(std::int64_t{2}, std::int64_t{1} << 24))
        ->capture_default_str();
    sub->add_option("--seed", o_.seed, "Seed of the generator (as train --seed)")->capture_default_str();
  }
  int run(const comm::MpiRuntime& mpi) override {
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
  io::MakeDatasetOptions o_{"", 4096, 128, 2, 1};
};

}  // namespace

std::unique_ptr<Command> register_make_dataset(CLI::App& parent, CLI::App*& sub) {
  sub =
      parent.add_subcommand("make-dataset", "Write the synthetic data set to HDF5 (/inputs, /labels) for train --data");
  return std::make_unique<MakeDatasetCommand>(sub);
}

}  // namespace microddp::app
