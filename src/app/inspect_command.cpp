// inspect_command.cpp — `microddp inspect FILE.h5`: what a checkpoint or dataset holds, and
// whether it is valid (every checksum, shape, dtype, label and NaN check). Rank 0 does the work.
// Exit code: 0 valid, 2 invalid (the reason is printed, naming the file and dataset).
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "app/command.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"
#include "io/data_format.hpp"
#include "io/hdf5_dataset.hpp"
#include "model/lr_schedule.hpp"
#include "model/param_layout.hpp"

namespace microddp::app {

namespace {

// "microddp-dataset", "microddp-checkpoint", ... (the `format` attribute); "data" for a file with
// no `format` but /inputs and /labels (written with h5py or similar); "" otherwise.
std::string file_format(const std::string& path) {
  io::hdf5_quiet();
  if (H5Fis_hdf5(path.c_str()) <= 0) return "";
  io::Hid f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!f.valid()) return "";
  if (!io::has_attr(f, "format")) return io::path_exists(f, "/inputs") && io::path_exists(f, "/labels") ? "data" : "";
  try {
    return io::read_attr_str(f, "format", path);
  } catch (const core::Error&) {
    return "";
  }
}

int inspect(const std::string& path) {
  const std::string fmt = file_format(path);
  try {
    if (fmt == io::kDatasetFormat || fmt == "data") {
      const auto r = io::data_format_of(path).check(path);
      if (r.microddp_format) {
        std::printf("# %s: microddp dataset v%" PRId64 "\n", path.c_str(), io::kDatasetFormatVersion);
      } else {
        std::printf("# %s: HDF5 data set without a 'format' attribute (as h5py writes it)\n", path.c_str());
      }
      std::printf("#   /inputs (%" PRId64 ", %" PRId64 ") %s%s, /labels (%" PRId64 ",) %s, %" PRId64 " classes%s",
                  r.samples, r.in_dim, r.inputs_dtype.c_str(),
                  r.inputs_dtype == "float32" ? "" : " (converted to float32 on read)", r.samples,
                  r.labels_dtype.c_str(), r.classes,
                  r.classes_inferred ? " = max label + 1 (no 'classes' attribute)" : "");
      if (r.has_seed) std::printf(", seed %" PRIu64, r.seed);
      std::printf("\n#   label counts:");
      for (std::size_t c = 0; c < r.label_counts.size() && c < 16; ++c) std::printf(" %" PRId64, r.label_counts[c]);
      std::printf("%s\n", r.label_counts.size() > 16 ? " ..." : "");
      std::printf("# VALID (all rows finite, all labels in range)\n");
      return 0;
    }
    // Anything else is treated as a checkpoint: read_checkpoint names what is wrong.
    const auto c = io::read_checkpoint(path);
    const auto& m = c.config;
    std::printf("# %s: microddp checkpoint v%" PRId64 "\n", path.c_str(), c.format_version);
    std::printf("#   steps_done %" PRId64 ", data_position %" PRId64 ", optimizer %s (step_count %" PRId64 ")\n",
                c.steps_done, c.data_position, m.optimizer.name.c_str(), c.optimizer_steps);
    // The model's parameters, as train counts them; the flat buffer adds the alignment padding
    // between them (model/param_layout.hpp).
    std::printf("#   model in=%" PRId64 " width=%" PRId64 " depth=%" PRId64 " classes=%" PRId64 " (%" PRId64
                " parameters; flat buffer %zu elements with alignment padding)\n",
                m.model.in_dim, m.model.width, m.model.depth, m.model.classes,
                model::parameter_count(model::param_layout(m.model)), c.params.size());
    std::printf("#   saved by %" PRId64 " ranks, strategy %s, backend %s; global_batch %" PRId64 ", seed %" PRIu64
                ", data %s\n",
                c.world_size, c.strategy.c_str(), c.backend.c_str(), m.global_batch, m.seed, c.data_source.c_str());
    // The learning-rate plan and the run record (format version 2).
    if (c.format_version >= 2) {
      const model::LrSchedule schedule(m.optimizer.lr, m.lr_schedule);
      std::printf("#   lr schedule %s; run %s%s\n", schedule.describe().c_str(), c.run.run_id.c_str(),
                  c.run.stopped_early ? " (stopped early)" : "");
      if (c.run.best_step > 0) {
        std::printf("#   best %s %.6g at step %" PRId64 " (%" PRId64 " evaluations since)\n", c.run.best_metric.c_str(),
                    c.run.best_value, c.run.best_step, c.run.evals_since_best);
      }
      std::size_t from = 0;
      while (from < c.run.plan_history.size()) {
        const std::size_t nl = std::min(c.run.plan_history.find('\n', from), c.run.plan_history.size());
        std::printf("#   history: %s\n", c.run.plan_history.substr(from, nl - from).c_str());
        from = nl + 1;
      }
    }
    std::printf("# %-40s %-14s %s\n", "dataset", "shape", "fnv1a64");
    for (const auto& d : c.datasets) {
      std::printf("  %-40s %-14s %016" PRIx64 " ok\n", d.path.c_str(), io::dims_string(d.dims).c_str(), d.checksum);
    }
    std::printf("# VALID (%zu datasets, all checksums match)\n", c.datasets.size());
    return 0;
  } catch (const core::UsageError& e) {
    std::printf("# INVALID: %s\n", e.what());
    std::fprintf(stderr, "microddp: error: %s\n", e.what());
    return 2;
  }
}

class InspectCommand final : public Command {
 public:
  explicit InspectCommand(CLI::App* sub) {
    sub->add_option("file", path_, "Checkpoint or dataset (FILE.h5)")->required();
  }
  int run(const comm::MpiRuntime& mpi) override {
    int code = 0;
    if (mpi.rank() == 0) code = inspect(path_);
    std::fflush(stdout);
    const auto watched = mpi.watch("inspect's result broadcast");
    MPI_Bcast(&code, 1, MPI_INT, 0, mpi.world());
    return code;
  }

 private:
  std::string path_;
};

}  // namespace

std::unique_ptr<Command> register_inspect(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("inspect",
                              "Show what a checkpoint or data set file holds and verify it (exit 2 if invalid)");
  return std::make_unique<InspectCommand>(sub);
}

}  // namespace microddp::app
