// run_control.cpp — checkpoint/resume/signal/data plumbing of `microddp train`.
#include "app/run_control.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "app/agreed_usage_error.hpp"
#include "app/allow_changed.hpp"
#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_ownership.hpp"
#include "io/hdf5_data_source.hpp"
#include "io/model_weights.hpp"

namespace microddp::app {

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

void install_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // interrupted system calls (file I/O, sleeps) resume
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

void restore_handlers() {
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGUSR1, SIG_DFL);
}

}  // namespace

void add_run_control_options(CLI::App* sub, RunControlOptions& o) {
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

void validate_run_control_options(const RunControlOptions& o) {
  MDDP_USAGE_CHECK(!o.checkpoint_dir.empty(), "--checkpoint-dir must not be empty");
  const bool fresh = o.resume.empty() || o.resume == "never";
  MDDP_USAGE_CHECK(!o.overwrite || fresh, "--overwrite starts the run over: give it with --resume never, not --resume "
                                              << o.resume << " (which continues a run)");
  MDDP_USAGE_CHECK(o.allow_changed.empty() || !fresh,
                   "--allow-changed applies to a resume: give it with --resume auto or --resume FILE");
  (void)parse_allow_changed(o.allow_changed.empty() ? "steps" : o.allow_changed);  // the names, before MPI
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

RunControl::RunControl(const RunControlOptions& o, const comm::MpiRuntime& mpi, std::string backend)
    : o_(o), mpi_(mpi), backend_(std::move(backend)) {
  install_handlers();
}

RunControl::~RunControl() { restore_handlers(); }

std::unique_ptr<data::DataSource> open_data_file(const comm::MpiRuntime& mpi, const std::string& path,
                                                 std::int64_t classes_option, const std::string& option,
                                                 const io::DataKeys& keys, std::int64_t resident_limit_bytes) {
  // Rank 0 opens the file first: when neither the file nor --classes says how many classes there
  // are, it reads all of /labels once (max label + 1) and the others take its answer, instead of
  // every rank reading the whole dataset. Its verdict is broadcast, so a bad file is one message
  // and exit 2 on every rank.
  std::unique_ptr<data::DataSource> data;
  std::string error;
  std::int64_t classes = classes_option;
  if (mpi.rank() == 0) {
    try {
      auto source = std::make_unique<io::Hdf5DataSource>(path, classes_option, keys);
      source->set_resident_limit_bytes(resident_limit_bytes);
      classes = source->classes();
      data = std::move(source);
    } catch (const core::UsageError& e) {
      error = e.what();
    }
  }
  {
    const auto watched = mpi.watch("the --data agreement");
    std::int64_t hdr[2] = {static_cast<std::int64_t>(error.size()), classes};
    MDDP_MPI_CHECK(MPI_Bcast(hdr, 2, MPI_INT64_T, 0, mpi.world()));
    if (hdr[0] > 0) {
      error.resize(static_cast<std::size_t>(hdr[0]));
      MDDP_MPI_CHECK(MPI_Bcast(error.data(), comm::to_mpi_int(hdr[0]), MPI_CHAR, 0, mpi.world()));
      core::throw_usage_error(error, /*agreed=*/true);
    }
    classes = hdr[1];
  }
  if (mpi.rank() != 0) {
    try {
      auto source = std::make_unique<io::Hdf5DataSource>(path, classes, keys);
      source->set_resident_limit_bytes(resident_limit_bytes);
      data = std::move(source);
    } catch (const core::UsageError& e) {
      error = e.what();
    }
  }
  agree_on_usage_error(mpi, "the --data agreement", error, option + " " + path + " could not be opened on another rank");
  return data;
}

const data::DataSource* RunControl::open_data_source(std::int64_t classes_option) {
  if (o_.data_path.empty()) return nullptr;
  data_ = open_data_file(mpi_, o_.data_path, classes_option, "--data", o_.keys, o_.data_memory_mb << 20);
  return data_.get();
}

std::string RunControl::data_summary() const {
  return data_ ? static_cast<const io::Hdf5DataSource*>(data_.get())->summary() : std::string();
}

void RunControl::note(const std::string& line) const {
  if (mpi_.rank() != 0) return;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void RunControl::start(ddp::Trainer& trainer) {
  const bool fresh = o_.resume.empty() || o_.resume == "never";
  if (!fresh) {
    io::ResumeRequest req{o_.resume, o_.checkpoint_dir,
                          parse_allow_changed(o_.allow_changed.empty() ? "steps" : o_.allow_changed), ""};
    req.refusal_hint =
        ". Nothing was loaded or deleted. To continue that run, give the settings it was saved with (the "
        "learning-rate plan may change: --allow-changed lr,lr-schedule); to start a new run, use another "
        "--checkpoint-dir, or --resume never --overwrite to delete the checkpoints in " +
        o_.checkpoint_dir;
    const io::ResumeResult r = [&] {
      const auto watched = mpi_.watch("checkpoint resume (choice, broadcasts and checks)");
      return io::resume(mpi_.world(), req, trainer);
    }();
    for (const auto& n : r.notes) note("# resume: " + n);
    if (r.loaded) {
      note("# resume: loaded " + r.path + " (step " + std::to_string(r.steps_done) + ")");
      last_saved_step_ = r.steps_done;
      resumed_ = true;
      run_ = r.run;
      if (!r.changed.empty()) {
        // The record says what changed at which step (rank 0 knows the differences; all get the record).
        std::string line = "step " + std::to_string(r.steps_done) + ":";
        for (std::size_t i = 0; i < r.changed.size(); ++i) {
          line += (i == 0 ? " " : "; ") + r.changed[i].field + " " + r.changed[i].saved + " -> " + r.changed[i].run;
        }
        if (mpi_.rank() == 0) run_.add_history(line);
        note("# resume: --allow-changed: " + line);
      }
      io::broadcast_run_info(mpi_.world(), run_);
    }
  }
  if (!resumed_) fresh_start(trainer);
  claim_checkpoint_dir();
}

void RunControl::fresh_start(ddp::Trainer& trainer) {
  run_ = io::RunInfo{};
  if (mpi_.rank() == 0) run_.run_id = io::new_run_id();
  if (!o_.init_from.empty()) {
    const std::string what = [&] {
      const auto watched = mpi_.watch("--init-from (rank 0 reads, broadcasts)");
      return io::load_weights(mpi_.world(), o_.init_from, trainer);
    }();
    run_.add_history("step 0: " + what);
    note("# init     : " + what + "; fresh optimizer state, this run's settings");
  }
  io::broadcast_run_info(mpi_.world(), run_);
}

void RunControl::claim_checkpoint_dir() {
  // Rank 0 looks (the directory is shared); a refusal is one agreed message on every rank.
  run_on_rank0(mpi_, "checkpoint directory check (rank 0)", [&] {
    const std::vector<std::string> other = io::other_runs_checkpoints(o_.checkpoint_dir, run_.run_id);
    if (other.empty()) return;
    std::string names;
    for (std::size_t i = 0; i < other.size() && i < 3; ++i) names += (i == 0 ? "" : ", ") + other[i];
    if (other.size() > 3) names += ", ...";
    MDDP_USAGE_CHECK(o_.overwrite, "--checkpoint-dir " << o_.checkpoint_dir << " holds " << other.size()
                                                       << " checkpoint" << (other.size() == 1 ? "" : "s")
                                                       << " of another run (" << names
                                                       << "); this run would mix its checkpoints with them. Nothing "
                                                          "was deleted. Continue that run with --resume auto (and its "
                                                          "settings), use another --checkpoint-dir, or give --resume "
                                                          "never --overwrite to delete them and start over");
    for (const auto& f : other) {
      MDDP_USAGE_CHECK(std::remove(f.c_str()) == 0, "--overwrite: cannot delete " << f << ": " << std::strerror(errno));
    }
    std::printf("# overwrite: deleted %zu checkpoint%s of another run in %s (%s)\n", other.size(),
                other.size() == 1 ? "" : "s", o_.checkpoint_dir.c_str(), names.c_str());
    std::fflush(stdout);
  });
}

io::SaveResult RunControl::write(const ddp::Trainer& trainer, const std::string& path) {
  if (mpi_.rank() == 0) {
    // mkdir -p of one level is enough for the usual "checkpoints/"; deeper paths must exist.
    if (::mkdir(o_.checkpoint_dir.c_str(), 0755) != 0 && errno != EEXIST) {
      std::fprintf(stderr, "microddp: warning: cannot create %s: %s\n", o_.checkpoint_dir.c_str(),
                   std::strerror(errno));
    }
  }
  io::SaveOptions so;
  so.dir = o_.checkpoint_dir;
  so.keep = o_.keep;
  so.writer = o_.writer == "rank0" ? io::WriterMode::Rank0 : io::WriterMode::Parallel;
  so.backend = backend_;
  so.faults = o_.faults;
  so.save_number = ++saves_;
  so.run = run_;
  so.path = path;
  // Watched like a collective: the other ranks wait in the outcome broadcast (or the MPI-IO write)
  // while the file is written, so --comm-timeout must exceed the checkpoint's write time.
  const auto watched = mpi_.watch("checkpoint save (write, outcome broadcast)");
  return io::save_checkpoint(mpi_.world(), trainer, so);
}

void RunControl::save(const ddp::Trainer& trainer, const char* why) {
  const io::SaveResult r = write(trainer, "");
  last_saved_step_ = trainer.steps_done();
  if (mpi_.rank() == 0) {
    std::printf("# checkpoint (%s): %s, %.2f MiB, write %.3f s, publish %.3f s, verify %.3f s%s\n", why, r.path.c_str(),
                static_cast<double>(r.bytes) / (1 << 20), r.write_s, r.publish_s, r.verify_s,
                r.deleted.empty() ? "" : (", removed " + std::to_string(r.deleted.size()) + " old").c_str());
    std::fflush(stdout);
  }
}

void RunControl::save_best(const ddp::Trainer& trainer) {
  const io::SaveResult r = write(trainer, io::best_checkpoint_path(o_.checkpoint_dir));
  if (mpi_.rank() == 0) {
    std::printf("# best     : %s (step %lld), %.2f MiB, write %.3f s\n", r.path.c_str(),
                static_cast<long long>(trainer.steps_done()), static_cast<double>(r.bytes) / (1 << 20), r.write_s);
    std::fflush(stdout);
  }
}

void RunControl::stop_early(const ddp::Trainer& trainer) {
  run_.stopped_early = true;
  if (o_.checkpoint_every > 0) save(trainer, "early stop");
}

bool RunControl::after_step(ddp::Trainer& trainer, comm::Communicator& comm) {
  const std::int64_t done = trainer.steps_done();
  const bool finished = done >= trainer.config().steps;
  if (o_.checkpoint_every > 0 && (done % o_.checkpoint_every == 0 || finished) && done != last_saved_step_) {
    save(trainer, finished ? "final" : "periodic");
  }
  // Agree on the stop flag: a signal that reached any rank stops all of them after this step.
  std::int64_t mine = g_stop_signal, agreed = 0;
  comm.all_reduce(core::TensorView::of(&mine, 1), core::TensorView::of(&agreed, 1), comm::ReduceOp::Max);
  if (agreed == 0 || finished) return false;
  if (done != last_saved_step_) save(trainer, agreed == SIGTERM ? "SIGTERM" : "SIGUSR1");
  if (mpi_.rank() == 0) {
    std::printf("# stopping after step %" PRId64 " on signal %" PRId64
                ": checkpoint written, exit code %d (requeue; rerun with --resume auto)\n",
                done, agreed, kExitRequeue);
    std::fflush(stdout);
  }
  stopped_by_signal_ = true;
  return true;
}

}  // namespace microddp::app
