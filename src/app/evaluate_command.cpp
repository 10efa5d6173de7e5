// evaluate_command.cpp — `microddp evaluate --checkpoint CKPT --data FILE.h5`: loss, accuracy,
// per-class accuracy and the confusion matrix of a checkpoint's model on a data file, data-parallel
// (ddp/evaluator.hpp: each rank a contiguous run of whole blocks of rows, integer counts
// all-reduced, so the output is identical at every world size). No trainer: rank 0 reads the
// checkpoint (fully verified, io/checkpoint_load.hpp) and broadcasts the model's shape and
// parameters; every rank opens the data file (errors agreed: exit 2 everywhere). Rank 0 prints
// text, or JSON with --json; --dump-logits writes every row's logits (gathered to rank 0) as text.
#include <mpi.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "app/agreed_usage_error.hpp"
#include "app/command.hpp"
#include "app/compute_device.hpp"
#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "ddp/evaluator.hpp"
#include "io/checkpoint_load.hpp"
#include "io/hdf5_data_source.hpp"
#include "io/output_file.hpp"
#include "model/mlp.hpp"

namespace microddp::app {

namespace {

// The text output prints the confusion matrix up to this many classes (JSON always has it).
constexpr std::int64_t kMaxPrintedClasses = 32;

struct LoadedModel {
  model::MlpConfig config;
  std::int64_t steps_done = 0;
  std::vector<float> params;  // flat, gradient-ready layout
};

// Collective: rank 0 reads and verifies the checkpoint, everyone gets the shape and parameters.
LoadedModel load_model(const comm::MpiRuntime& mpi, comm::Communicator& comm, const std::string& path) {
  LoadedModel m;
  std::int64_t head[5] = {0, 0, 0, 0, 0};
  run_on_rank0(mpi, "evaluate: rank 0 reads the checkpoint", [&] {
    io::CheckpointContents c = io::read_checkpoint(path);
    m.config = c.config.model;
    m.steps_done = c.steps_done;
    m.params = std::move(c.params);
    head[0] = m.config.in_dim;
    head[1] = m.config.width;
    head[2] = m.config.depth;
    head[3] = m.config.classes;
    head[4] = m.steps_done;
  });
  {
    const auto watched = mpi.watch("evaluate: the model's shape");
    MDDP_MPI_CHECK(MPI_Bcast(head, 5, MPI_INT64_T, 0, mpi.world()));
  }
  m.config = {head[0], head[1], head[2], head[3]};
  m.steps_done = head[4];
  m.params.resize(static_cast<std::size_t>(model::flat_count(model::param_layout(m.config))));
  comm.broadcast(core::TensorView::of(m.params.data(), static_cast<std::int64_t>(m.params.size())), 0).wait();
  return m;
}

// "" when the file fits the model; else what differs. The file's class count is stated only when
// the file states it (its 'classes' attribute): without one the source took the model's.
std::string data_mismatch(const io::Hdf5DataSource& source, const model::MlpConfig& m, const std::string& ckpt) {
  const bool features = source.in_dim() != m.in_dim;
  const bool classes = source.classes() != m.classes;
  if (!features && !classes) return {};
  std::ostringstream os;
  os << source.path() << " has ";
  if (features) os << source.in_dim() << " features" << (classes ? " and " : "");
  if (classes) os << source.classes() << " classes (its 'classes' attribute)";
  os << ", but the model of " << ckpt << " ";
  if (features) os << "takes " << m.in_dim << " features" << (classes ? " and " : "");
  if (classes) os << "has " << m.classes << " classes";
  return os.str();
}

std::string model_shape(const model::MlpConfig& m) {
  return std::to_string(m.in_dim) + "-" + std::to_string(m.width) + "x" + std::to_string(m.depth) + "-" +
         std::to_string(m.classes);
}

class EvaluateCommand final : public Command {
 public:
  explicit EvaluateCommand(CLI::App* sub) {
    sub->add_option("--checkpoint", ckpt_, "Checkpoint file (ckpt_*.h5) whose model to evaluate")->required();
    sub->add_option("--data", data_, "HDF5 data file (/inputs, /labels), as train --data takes")->required();
    sub->add_option("--inputs-key", keys_.inputs, "The dataset of the inputs in --data, as train's")
        ->capture_default_str();
    sub->add_option("--labels-key", keys_.labels, "The dataset of the labels in --data, as train's")
        ->capture_default_str();
    sub->add_flag("--json", json_, "Print the result as JSON instead of text");
    sub->add_option("--batch", block_,
                    "Rows per forward pass (a block; ranks take whole blocks, so the result does not depend on "
                    "the number of ranks); at most the file's rows are held at once")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
        ->capture_default_str();
    dump_option_ = sub->add_option("--dump-logits", dump_, "Write every row's logits to this text file (one row per line)");
    sub->add_option("--threads", threads_,
                    "BLAS threads per rank (0 = as train: the environment's or this rank's CPUs / ranks on this node)")
        ->check(CLI::Range(0, 1024))
        ->capture_default_str();
    sub->add_option("--device", device_, "cpu, cuda (this rank's GPU) or auto, as train --device")
        ->envname("MICRODDP_DEVICE")
        ->capture_default_str();
  }
  void validate() override {
    validate_device_name(device_);
    for (const auto* f : {&ckpt_, &data_}) {
      struct stat st {};
      MDDP_USAGE_CHECK(::stat(f->c_str(), &st) == 0, *f << ": " << std::strerror(errno));
    }
    // Before any work: a --dump-logits that can never be written (a directory, a read-only place, an
    // input, a checkpoint) is refused now, not after the whole evaluation (io/output_file.hpp).
    if (dump_option_->count() > 0) io::check_output_path(dump_, dump_rules());
  }
  int run(const comm::MpiRuntime& mpi) override;

 private:
  void print_text(const ddp::EvalCounts& c, const LoadedModel& m, std::int64_t rows, const std::string& device,
                  int ranks, double seconds) const;
  void print_json(const ddp::EvalCounts& c, const LoadedModel& m, std::int64_t rows, const std::string& device,
                  int ranks, double seconds) const;
  void dump_logits(const comm::MpiRuntime& mpi, const std::vector<float>& mine, std::int64_t classes,
                   std::int64_t rows) const;

  io::OutputRules dump_rules() const { return {"--dump-logits", {ckpt_, data_}}; }

  std::string ckpt_, data_, dump_, device_ = "auto";
  CLI::Option* dump_option_ = nullptr;
  io::DataKeys keys_;  // --inputs-key, --labels-key
  bool json_ = false;
  std::int64_t block_ = 1024;
  int threads_ = 0;
};

int EvaluateCommand::run(const comm::MpiRuntime& mpi) {
  core::Stopwatch wall;
  const int threads = blas_threads(threads_, mpi, comm_settings()).threads;
  ComputeChoice compute = choose_compute(device_, "mpi", /*comm_given=*/true, /*tf32=*/false, threads, mpi);
  auto comm = make_communicator(compute.comm, mpi);
  const LoadedModel m = load_model(mpi, *comm, ckpt_);

  // Every rank opens the file; the model says how many classes (a file's `classes` attribute must
  // agree with it).
  std::unique_ptr<io::Hdf5DataSource> source;
  std::string error;
  try {
    source = std::make_unique<io::Hdf5DataSource>(data_, m.config.classes, keys_);
    error = data_mismatch(*source, m.config, ckpt_);
  } catch (const core::UsageError& e) {
    error = e.what();
  }
  agree_on_usage_error(mpi, "evaluate: opening --data", error,
                       "--data " + data_ + " could not be opened on another rank");

  // A block never holds more rows than the file: the buffers (activations, staging) are sized by
  // min(--batch, rows), and the blocks, hence every row's logits, are the same as with --batch.
  block_ = std::min(block_, source->rows());
  model::FullMLP net(m.config, block_, *compute.ops);
  net.param_buffer().from_host(m.params.data(), 0, net.flat_count());
  ddp::Evaluator evaluator(net, *compute.ops, block_);
  std::vector<float> logits;  // this rank's rows, in order (--dump-logits)
  ddp::Evaluator::LogitsFn keep;
  if (!dump_.empty()) {
    keep = [&](const std::int64_t*, std::int64_t n, const float* z) {
      logits.insert(logits.end(), z, z + n * m.config.classes);
    };
  }
  const ddp::EvalCounts counts = ddp::evaluate(*comm, evaluator, *source, source->rows(), {}, keep);
  if (!dump_.empty()) dump_logits(mpi, logits, m.config.classes, source->rows());
  const std::string device = compute.ops->device() == core::Device::Host ? "cpu" : "cuda";
  if (mpi.rank() == 0) {
    if (json_) {
      print_json(counts, m, source->rows(), device, mpi.size(), wall.elapsed_s());
    } else {
      print_text(counts, m, source->rows(), device, mpi.size(), wall.elapsed_s());
    }
    std::fflush(stdout);
  }
  return 0;
}

void EvaluateCommand::print_text(const ddp::EvalCounts& c, const LoadedModel& m, std::int64_t rows,
                                 const std::string& device, int ranks, double seconds) const {
  std::printf("# evaluate %s (step %" PRId64 ", model %s) on %s (%" PRId64 " rows): %d rank%s, %s, blocks of %" PRId64
              " rows, %.2f s\n",
              ckpt_.c_str(), m.steps_done, model_shape(m.config).c_str(), data_.c_str(), rows, ranks,
              ranks == 1 ? "" : "s", device.c_str(), block_, seconds);
  std::printf("loss %.6f  accuracy %.4f (%" PRId64 " of %" PRId64 ")\n", c.mean_loss(), c.accuracy(), c.correct,
              c.rows);
  if (c.loss_nan + c.loss_huge > 0) {
    std::printf("# %" PRId64 " rows with a NaN loss, %" PRId64 " with an infinite or huge one (>= 2^31)\n", c.loss_nan,
                c.loss_huge);
  }
  std::printf("# %5s %9s %9s %9s\n", "class", "rows", "correct", "accuracy");
  for (std::int64_t k = 0; k < c.classes; ++k) {
    std::printf("  %5" PRId64 " %9" PRId64 " %9" PRId64 " %9.4f\n", k, c.class_rows(k), c.class_correct(k),
                c.class_accuracy(k));
  }
  if (c.classes > kMaxPrintedClasses) {
    std::printf("# confusion matrix: %" PRId64 " classes, see --json\n", c.classes);
    return;
  }
  std::printf("# confusion matrix: row = true class, column = predicted class\n#     ");
  for (std::int64_t p = 0; p < c.classes; ++p) std::printf(" %6" PRId64, p);
  std::printf("\n");
  for (std::int64_t t = 0; t < c.classes; ++t) {
    std::printf("  %3" PRId64 " ", t);
    for (std::int64_t p = 0; p < c.classes; ++p) {
      std::printf(" %6" PRId64, c.confusion[static_cast<std::size_t>(t * c.classes + p)]);
    }
    std::printf("\n");
  }
}

void EvaluateCommand::print_json(const ddp::EvalCounts& c, const LoadedModel& m, std::int64_t rows,
                                 const std::string& device, int ranks, double seconds) const {
  nlohmann::json per_class = nlohmann::json::array(), confusion = nlohmann::json::array();
  for (std::int64_t k = 0; k < c.classes; ++k) {
    per_class.push_back(
        {{"class", k}, {"rows", c.class_rows(k)}, {"correct", c.class_correct(k)}, {"accuracy", c.class_accuracy(k)}});
    const auto* row = c.confusion.data() + k * c.classes;
    confusion.push_back(std::vector<std::int64_t>(row, row + c.classes));
  }
  // One key per line (dump(2)): the result is identical at every world size except world_size and
  // seconds, which a diff can drop by line.
  const nlohmann::json j = {
      {"checkpoint", ckpt_},
      {"steps_done", m.steps_done},
      {"model", {{"in_dim", m.config.in_dim}, {"width", m.config.width}, {"depth", m.config.depth}}},
      {"data", data_},
      {"rows", rows},
      {"classes", c.classes},
      {"block_rows", block_},
      {"loss", c.mean_loss()},  // null when not finite
      {"loss_nan_rows", c.loss_nan},
      {"loss_huge_rows", c.loss_huge},
      {"accuracy", c.accuracy()},
      {"correct", c.correct},
      {"per_class", per_class},
      {"confusion", confusion},
      {"device", device},
      {"world_size", ranks},
      {"seconds", seconds},
  };
  std::printf("%s\n", j.dump(2).c_str());
}

void EvaluateCommand::dump_logits(const comm::MpiRuntime& mpi, const std::vector<float>& mine, std::int64_t classes,
                                  std::int64_t rows) const {
  // Rank r holds a contiguous run of rows in file order: gathering in rank order is file order.
  const auto watched = mpi.watch("evaluate --dump-logits (gather to rank 0)");
  const int n = mpi.size();
  const int count = comm::to_mpi_int(static_cast<std::int64_t>(mine.size()));
  std::vector<int> counts(static_cast<std::size_t>(n)), offsets(static_cast<std::size_t>(n));
  MDDP_MPI_CHECK(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, mpi.world()));
  std::vector<float> all;
  if (mpi.rank() == 0) {
    std::int64_t total = 0;
    for (int r = 0; r < n; ++r) {
      offsets[static_cast<std::size_t>(r)] = comm::to_mpi_int(total);
      total += counts[static_cast<std::size_t>(r)];
    }
    MDDP_CHECK(total == rows * classes, "gathered " << total << " logits for " << rows << " rows");
    all.resize(static_cast<std::size_t>(total));
  }
  MDDP_MPI_CHECK(
      MPI_Gatherv(mine.data(), count, MPI_FLOAT, all.data(), counts.data(), offsets.data(), MPI_FLOAT, 0, mpi.world()));
  // Rank 0 writes DUMP.tmp and renames it (io/output_file.hpp): a full disk or any other write
  // error leaves no partial file and no temporary, and is one message and exit 2 on every rank.
  run_on_rank0(mpi, "evaluate --dump-logits (rank 0 writes)", [&] {
    io::OutputFile out(dump_, dump_rules());
    std::FILE* f = std::fopen(out.temp().c_str(), "w");
    MDDP_USAGE_CHECK(f != nullptr, "--dump-logits " << dump_ << ": cannot write " << out.temp() << ": "
                                                    << std::strerror(errno));
    int err = 0;  // errno of the first failed write
    auto note = [&](bool failed) {
      if (failed && err == 0) err = errno != 0 ? errno : EIO;
    };
    note(std::fprintf(f, "# logits of %s under %s: %" PRId64 " rows (file order) x %" PRId64 " classes\n",
                      data_.c_str(), ckpt_.c_str(), rows, classes) < 0);
    for (std::int64_t i = 0; i < rows && err == 0; ++i) {
      for (std::int64_t k = 0; k < classes; ++k) {
        // %.9g: 9 significant digits round-trip every float32 exactly.
        std::fprintf(f, k == 0 ? "%.9g" : " %.9g", static_cast<double>(all[static_cast<std::size_t>(i * classes + k)]));
      }
      note(std::fputc('\n', f) == EOF);
    }
    note(std::fflush(f) != 0 || std::ferror(f) != 0);
    note(std::fclose(f) != 0);
    MDDP_USAGE_CHECK(err == 0, "--dump-logits " << dump_ << ": writing failed: " << std::strerror(err)
                                                << " (" << dump_ << " is as it was; no partial file is left)");
    out.publish();
  });
}

}  // namespace

std::unique_ptr<Command> register_evaluate(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("evaluate",
                              "Loss, accuracy, per-class accuracy and confusion matrix of a checkpoint's model on a "
                              "data file (data-parallel; the same result at any number of ranks)");
  return std::make_unique<EvaluateCommand>(sub);
}

}  // namespace microddp::app
