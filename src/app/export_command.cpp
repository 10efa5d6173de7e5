// export_command.cpp — `microddp export CKPT OUT.h5`: the checkpoint's model, verified, as a plain
// HDF5 file for any HDF5 reader (io/model_export.hpp; docs/checkpoint_format.md, "Exported model").
// Rank 0 reads and writes; the others wait for its verdict (bad input: exit 2 on every rank).
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "app/agreed_usage_error.hpp"
#include "app/command.hpp"
#include "core/error.hpp"
#include "io/checkpoint_load.hpp"
#include "io/model_export.hpp"
#include "io/output_file.hpp"

namespace microddp::app {

namespace {

class ExportCommand final : public Command {
 public:
  explicit ExportCommand(CLI::App* sub) {
    sub->add_option("checkpoint", ckpt_, "Checkpoint file (ckpt_*.h5)")->required();
    sub->add_option("output", out_, "Output file (OUT.h5): one group per layer, weight and bias")->required();
  }
  void validate() override {
    struct stat st {};
    MDDP_USAGE_CHECK(::stat(ckpt_.c_str(), &st) == 0, ckpt_ << ": " << std::strerror(errno));
    // Never onto the checkpoint itself or another one (io/output_file.hpp): export writes a model, and
    // a checkpoint replaced by one is lost (--resume auto would skip it as invalid).
    io::check_output_path(out_, {"export's output", {ckpt_}});
  }
  int run(const comm::MpiRuntime& mpi) override {
    run_on_rank0(mpi, "export: rank 0 reads the checkpoint and writes the model", [&] {
      const io::CheckpointContents c = io::read_checkpoint(ckpt_);
      const model::MlpConfig& m = c.config.model;
      io::write_model_export(out_, m, c.params, {ckpt_, c.steps_done}, {"export's output", {ckpt_}});
      std::printf("# exported %s (step %" PRId64 ") to %s: %" PRId64 " layers %" PRId64, ckpt_.c_str(), c.steps_done,
                  out_.c_str(), m.depth + 1, m.in_dim);
      for (std::int64_t l = 0; l < m.depth; ++l) std::printf("-%" PRId64, m.width);
      std::printf("-%" PRId64 ", relu between layers, logits out; /layer_NN/weight (out, in), /layer_NN/bias\n",
                  m.classes);
      std::fflush(stdout);
    });
    return 0;
  }

 private:
  std::string ckpt_, out_;
};

}  // namespace

std::unique_ptr<Command> register_export(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("export",
                              "Write a checkpoint's model as plain HDF5 (one group per layer: weight, bias, "
                              "activation) for h5py/numpy or any HDF5 reader");
  return std::make_unique<ExportCommand>(sub);
}

}  // namespace microddp::app
