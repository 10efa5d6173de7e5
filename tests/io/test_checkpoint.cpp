// test_checkpoint.cpp — checkpoint round trip and exact resume, in-process over MPI.
//
//   RoundTripIsBitwise: save, read back, load into a fresh trainer: parameters, Adam moments and
//     step count are bit-identical; checksums are verified on the way.
//   ResumeIsBitwise/<strategy>: 2N straight steps == N steps + save + fresh trainer + resume + N
//     steps, bitwise (losses every step and final parameters), for every strategy of
//     ddp::kStrategies (same world size, same backend).
//   WorldSizeChange (run with 4 ranks): save at np 4, resume on sub-communicators of 2 and 3 ranks;
//     the result equals an uninterrupted single-process run within 1e-5 relative (the only
//     difference is the order of the per-rank partial sums, as in test_ddp_equivalence.cpp).
//   Sharded (--shard, ddp/zero): a sharded run's checkpoint is the same file as plain DDP's (the
//     full optimizer state, gathered from the shards: equal to DDP's within 1e-6, the save's
//     strategy records the mode); resuming it in the same mode is bitwise; any checkpoint, sharded
//     or not, resumes in any mode (within 1e-6 of the uninterrupted run); at np 4 a sharded
//     checkpoint resumes sharded on 2 and 3 ranks (WorldSizeChange).
//   AutoSkipsCorruptNewest: a corrupted newest checkpoint is skipped by `auto`, with a note.
//   EveryStoredFieldRoundTrips: a configuration with every stored field of
//     ddp::train_config_fields() away from its default is written and read back field for field.
//   CompatibilityRefusesEveryResumeField: a run differing in any one `resume` field (nesterov,
//     beta1, beta2 and eps included) is refused naming that field and both values; one differing
//     only in other fields (steps, buckets, strategy, checks) fits.
//   AutoRefusesACheckpointThatDoesNotFit: `auto` refuses (agreed UsageError naming the field) a
//     valid checkpoint of other settings instead of skipping it and starting over; --allow-changed
//     lets the learning-rate plan change and reports what changed; a seed never may.
//   RotationDeletesOnlyThisRunsCheckpoints: --keep counts and deletes the checkpoints of the saving
//     run's identity only; another run's in the same directory stay, and best.h5 is never rotated.
//   FormatVersion1StillReads: a version-1 file's attributes read back, the version-2 fields at
//     their defaults, and its run identity is its settings' digest.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "comm/backends/mpi_backend.hpp"
#include "ddp/grad_sync.hpp"
#include "ddp/trainer.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_ownership.hpp"
#include "ddp/train_config_fields.hpp"
#include "kernels/ops.hpp"
#include "support/config_field_values.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::io {
namespace {

ddp::TrainConfig small_config(const std::string& strategy) {
  ddp::TrainConfig c;
  c.model = model::MlpConfig{8, 16, 3, 3};
  c.global_batch = 13;  // divides by none of 2, 3, 4: uneven shares
  c.steps = 8;
  c.seed = 5;
  c.strategy = ddp::parse_strategy(strategy);
  c.sync_options.bucket_mb = 0.0005;  // ~500 B buckets: several buckets even for this tiny model
  return c;
}

// A fresh directory shared by all ranks of `comm` (rank 0 creates, name broadcast).
std::string shared_tmpdir(MPI_Comm comm, const char* tag) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  char buf[256] = {};
  if (rank == 0) {
    std::string t = std::filesystem::temp_directory_path() / (std::string("mddp_") + tag + "_XXXXXX");
    std::snprintf(buf, sizeof buf, "%s", t.c_str());
    if (mkdtemp(buf) == nullptr) buf[0] = '\0';
  }
  MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, comm);
  return buf;
}

void remove_dir(MPI_Comm comm, const std::string& d) {
  MPI_Barrier(comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) std::filesystem::remove_all(d);
}

struct TrainRun {
  std::vector<double> losses;
  std::vector<float> params;
};

std::vector<float> params_of(const ddp::Trainer& t) {
  return {t.model().param_data(), t.model().param_data() + t.model().flat_count()};
}

// Steps a fresh trainer (optionally resumed from `resume`) until `until`, saving at `save_at`.
TrainRun train(MPI_Comm mpi, const ddp::TrainConfig& cfg, std::int64_t until, const std::string& dir,
               std::int64_t save_at, const std::string& resume_spec = "") {
  comm::Communicator comm(std::make_unique<comm::MpiBackend>(mpi));
  comm.attach_sync_comm(mpi);  // as make_communicator does: the trainer checks collective fingerprints
  auto ops = kernels::make_cpu_ops(1);
  ddp::Trainer t(cfg, comm, *ops);
  t.setup();
  if (!resume_spec.empty()) {
    const ResumeResult r = resume(mpi, resume_spec, dir, t);
    EXPECT_TRUE(r.loaded);
  }
  TrainRun run;
  while (t.steps_done() < until) {
    run.losses.push_back(t.step().loss);
    if (t.steps_done() == save_at) {
      SaveOptions o;
      o.dir = dir;
      o.backend = "mpi";
      save_checkpoint(mpi, t, o);
    }
  }
  run.params = params_of(t);
  return run;
}

TEST(Checkpoint, RoundTripIsBitwise) {
  const MPI_Comm world = MPI_COMM_WORLD;
  const std::string dir = shared_tmpdir(world, "rt");
  const auto cfg = small_config("naive");
  comm::Communicator comm(std::make_unique<comm::MpiBackend>(world));
  comm.attach_sync_comm(world);
  auto ops = kernels::make_cpu_ops(1);
  ddp::Trainer a(cfg, comm, *ops);
  a.setup();
  for (int i = 0; i < 3; ++i) a.step();
  SaveOptions o;
  o.dir = dir;
  o.backend = "mpi";
  const SaveResult saved = save_checkpoint(world, a, o);
  EXPECT_EQ(saved.path, checkpoint_path(dir, 3));

  const CheckpointContents c = read_checkpoint(saved.path);
  EXPECT_EQ(c.steps_done, 3);
  EXPECT_EQ(c.data_position, 3 * cfg.global_batch);
  EXPECT_EQ(c.optimizer_steps, 3);
  int size = 0;
  MPI_Comm_size(world, &size);
  EXPECT_EQ(c.world_size, size);
  ASSERT_EQ(c.params.size(), static_cast<std::size_t>(a.model().flat_count()));
  EXPECT_EQ(std::memcmp(c.params.data(), a.model().param_data(), c.params.size() * sizeof(float)), 0);

  ddp::Trainer b(cfg, comm, *ops);
  b.setup();
  const ResumeResult r = resume(world, saved.path, dir, b);
  ASSERT_TRUE(r.loaded);
  EXPECT_EQ(b.steps_done(), 3);
  EXPECT_EQ(b.optimizer().steps_taken(), 3);
  EXPECT_EQ(std::memcmp(b.model().param_data(), a.model().param_data(), c.params.size() * sizeof(float)), 0);
  auto sa = a.optimizer().state_buffers(), sb = b.optimizer().state_buffers();
  ASSERT_EQ(sa.size(), 2u);
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(std::memcmp(sa[i].data, sb[i].data, static_cast<std::size_t>(sa[i].count) * sizeof(float)), 0)
        << sa[i].name;
  }
  remove_dir(world, dir);
}

class ResumeIsBitwise : public ::testing::TestWithParam<std::string> {};

TEST_P(ResumeIsBitwise, StraightEqualsSavedAndResumed) {
  const MPI_Comm world = MPI_COMM_WORLD;
  const std::string dir = shared_tmpdir(world, "resume");
  const auto cfg = small_config(GetParam());
  const TrainRun straight = train(world, cfg, 8, dir, -1);
  const TrainRun first = train(world, cfg, 4, dir, 4);
  const TrainRun second = train(world, cfg, 8, dir, -1, "auto");
  ASSERT_EQ(first.losses.size() + second.losses.size(), straight.losses.size());
  for (std::size_t s = 0; s < straight.losses.size(); ++s) {
    const double got = s < 4 ? first.losses[s] : second.losses[s - 4];
    EXPECT_EQ(got, straight.losses[s]) << "step " << s << " (" << GetParam() << ")";
  }
  ASSERT_EQ(second.params.size(), straight.params.size());
  EXPECT_EQ(std::memcmp(second.params.data(), straight.params.data(), straight.params.size() * sizeof(float)), 0)
      << "resumed parameters differ from the uninterrupted run (" << GetParam() << ")";
  remove_dir(world, dir);
}

std::vector<std::string> strategies() {
  std::vector<std::string> v;
  for (auto s : ddp::kStrategies) v.emplace_back(ddp::strategy_name(s));
  return v;
}
INSTANTIATE_TEST_SUITE_P(AllStrategies, ResumeIsBitwise, ::testing::ValuesIn(strategies()),
                         [](const auto& p) { return p.param; });

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double max_diff = 0, max_ref = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::abs(a[i] - b[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::abs(b[i])));
  }
  return max_diff / max_ref;
}

TEST(Sharded, OneFormatBitwiseResumeAndAnyModeResumesAny) {
  const MPI_Comm world = MPI_COMM_WORLD;
  using ddp::zero::ShardMode;
  const std::vector<ShardMode> modes = {ShardMode::None, ShardMode::Optimizer, ShardMode::Gradients};
  auto cfg_of = [](ShardMode m) {
    auto c = small_config("bucketed");
    c.shard = m;
    return c;
  };
  // The checkpoints after 4 steps in every mode hold the same state.
  std::vector<CheckpointContents> saved;
  std::vector<std::string> dirs;
  for (const ShardMode m : modes) {
    dirs.push_back(shared_tmpdir(world, "shard"));
    (void)train(world, cfg_of(m), 4, dirs.back(), 4);
    saved.push_back(read_checkpoint(checkpoint_path(dirs.back(), 4)));
  }
  for (std::size_t i = 1; i < modes.size(); ++i) {
    SCOPED_TRACE(std::string(ddp::zero::shard_mode_name(modes[i])));
    EXPECT_EQ(saved[i].strategy, "bucketed+shard=" + std::string(ddp::zero::shard_mode_name(modes[i])));
    EXPECT_LE(max_rel_diff(saved[i].params, saved[0].params), 1e-6);
    ASSERT_EQ(saved[i].optimizer_state.size(), saved[0].optimizer_state.size());
    for (std::size_t b = 0; b < saved[0].optimizer_state.size(); ++b) {
      EXPECT_EQ(saved[i].optimizer_state[b].first, saved[0].optimizer_state[b].first);
      EXPECT_LE(max_rel_diff(saved[i].optimizer_state[b].second, saved[0].optimizer_state[b].second), 1e-5)
          << saved[0].optimizer_state[b].first;
    }
  }
  for (std::size_t to = 0; to < modes.size(); ++to) {
    const TrainRun straight = train(world, cfg_of(modes[to]), 8, dirs[to] + "/unused", -1);
    for (std::size_t from = 0; from < modes.size(); ++from) {
      SCOPED_TRACE(std::string(ddp::zero::shard_mode_name(modes[from])) + " -> " +
                   std::string(ddp::zero::shard_mode_name(modes[to])));
      const TrainRun resumed = train(world, cfg_of(modes[to]), 8, dirs[from], -1, checkpoint_path(dirs[from], 4));
      ASSERT_EQ(resumed.params.size(), straight.params.size());
      if (from == to) {
        EXPECT_EQ(std::memcmp(resumed.params.data(), straight.params.data(), straight.params.size() * sizeof(float)),
                  0);
        for (std::size_t s = 0; s < resumed.losses.size(); ++s) EXPECT_EQ(resumed.losses[s], straight.losses[4 + s]);
      }
      EXPECT_LE(max_rel_diff(resumed.params, straight.params), 1e-6);
    }
  }
  for (const auto& d : dirs) remove_dir(world, d);
}

// Gradient compression's state (PowerSGD's Q, per-rank error feedback) is saved and restored
// exactly: resuming at step 4 (compression began at step 2) equals the uninterrupted run bit for bit,
// and a run with other compression settings is refused.
TEST(Checkpoint, CompressionStateResumesBitwise) {
  const MPI_Comm world = MPI_COMM_WORLD;
  const std::string dir = shared_tmpdir(world, "compress");
  auto cfg = small_config("bucketed");
  cfg.compression.mode = ddp::CompressionMode::PowerSgd;
  cfg.compression.powersgd_rank = 1;  // rank 1: every weight of the small model compresses
  cfg.compression.powersgd_start_step = 2;
  const TrainRun straight = train(world, cfg, 8, dir, -1);
  const TrainRun first = train(world, cfg, 4, dir, 4);
  const TrainRun second = train(world, cfg, 8, dir, -1, "auto");
  ASSERT_EQ(first.losses.size() + second.losses.size(), straight.losses.size());
  for (std::size_t s = 0; s < straight.losses.size(); ++s) {
    EXPECT_EQ(s < 4 ? first.losses[s] : second.losses[s - 4], straight.losses[s]) << "step " << s;
  }
  EXPECT_EQ(std::memcmp(second.params.data(), straight.params.data(), straight.params.size() * sizeof(float)), 0)
      << "resumed parameters differ from the uninterrupted run";
  const CheckpointContents c = read_checkpoint(checkpoint_path(dir, 4));
  ASSERT_TRUE(c.compression.present);
  EXPECT_EQ(c.compression.config.mode, ddp::CompressionMode::PowerSgd);
  ASSERT_EQ(c.compression.tensors.size(), 2u);  // powersgd_q and error_feedback
  auto other = cfg;
  other.compression.error_feedback = false;
  EXPECT_THROW(check_compatible(c, other, c.data_source), core::UsageError);
  other.compression.mode = ddp::CompressionMode::None;
  EXPECT_THROW(check_compatible(c, other, c.data_source), core::UsageError);
  EXPECT_NO_THROW(check_compatible(c, cfg, c.data_source));
  remove_dir(world, dir);
}

TEST(Checkpoint, AutoSkipsCorruptNewest) {
  const MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  const std::string dir = shared_tmpdir(world, "auto");
  const auto cfg = small_config("naive");
  (void)train(world, cfg, 4, dir, 2);
  (void)train(world, cfg, 4, dir, 4);  // same run again, saving the newer checkpoint at step 4
  if (rank == 0) {
    // Flip one byte inside the raw data of a parameter (found with H5Dget_offset).
    const std::string p = checkpoint_path(dir, 4);
    haddr_t off = HADDR_UNDEF;
    {
      const hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      const hid_t d = H5Dopen2(f, "/model/layer_01/weight", H5P_DEFAULT);
      off = H5Dget_offset(d);
      H5Dclose(d);
      H5Fclose(f);
    }
    ASSERT_NE(off, HADDR_UNDEF);
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(off + 5));
    char ch = 0;
    f.read(&ch, 1);
    ch = static_cast<char>(ch ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(off + 5));
    f.write(&ch, 1);
  }
  MPI_Barrier(world);
  comm::Communicator comm(std::make_unique<comm::MpiBackend>(world));
  comm.attach_sync_comm(world);
  auto ops = kernels::make_cpu_ops(1);
  ddp::Trainer t(cfg, comm, *ops);
  t.setup();
  const ResumeResult r = resume(world, "auto", dir, t);
  EXPECT_TRUE(r.loaded);
  EXPECT_EQ(r.steps_done, 2) << "auto must fall back past the corrupted step-4 checkpoint";
  if (rank == 0) {
    ASSERT_FALSE(r.notes.empty());
    EXPECT_NE(r.notes[0].find("ckpt_0000000004.h5"), std::string::npos) << r.notes[0];
    // Explicit path: a clear, agreed error.
  }
  try {
    (void)resume(world, checkpoint_path(dir, 4), dir, t);
    ADD_FAILURE() << "loading the corrupted checkpoint by path succeeded";
  } catch (const core::UsageError& e) {
    EXPECT_TRUE(e.agreed());
    EXPECT_NE(std::string(e.what()).find("ckpt_0000000004.h5"), std::string::npos) << e.what();
  }
  remove_dir(world, dir);
}

// A checkpoint of `cfg` after 2 steps, in a fresh directory; returns its contents as read back.
CheckpointContents saved_after_two_steps(const ddp::TrainConfig& cfg, const char* tag) {
  const MPI_Comm world = MPI_COMM_WORLD;
  const std::string dir = shared_tmpdir(world, tag);
  (void)train(world, cfg, 2, dir, 2);
  CheckpointContents c = read_checkpoint(checkpoint_path(dir, 2));
  remove_dir(world, dir);
  return c;
}

TEST(Checkpoint, EveryStoredFieldRoundTrips) {
  // Every stored field moved away from its default, so a field that were not written or not read
  // back would come back as the default and differ.
  const ddp::TrainConfig defaults = small_config("naive");
  ddp::TrainConfig cfg = defaults;
  int stored = 0;
  for (const auto& f : ddp::train_config_fields()) {
    if (!f.rules.stored) continue;
    f.set(cfg, microddp::testing::another_value(f, cfg));
    ++stored;
  }
  // Format version 1's 18 configuration attributes (seed .. nesterov) and version 2's 6 of the
  // learning-rate schedule (lr_schedule .. lr_gamma).
  EXPECT_EQ(stored, 24);
  const CheckpointContents c = saved_after_two_steps(cfg, "fields");
  for (const auto& f : ddp::train_config_fields()) {
    if (!f.rules.stored) continue;
    EXPECT_FALSE(ddp::field_equal(f, defaults, cfg)) << f.name << " was not moved off its default";
    EXPECT_TRUE(ddp::field_equal(f, c.config, cfg))
        << f.name << ": wrote " << ddp::field_text(f, cfg) << ", read " << ddp::field_text(f, c.config);
  }
}

TEST(Checkpoint, CompatibilityRefusesEveryResumeField) {
  const ddp::TrainConfig cfg = small_config("naive");
  const CheckpointContents c = saved_after_two_steps(cfg, "compat");
  const std::string source = "synthetic";
  EXPECT_NO_THROW(check_compatible(c, cfg, source));
  for (const auto& f : ddp::train_config_fields()) {
    const ddp::TrainConfig run = microddp::testing::with_field_changed(f, cfg);
    if (!f.rules.resume) {
      EXPECT_NO_THROW(check_compatible(c, run, source)) << f.name << " may change on resume";
      continue;
    }
    try {
      check_compatible(c, run, source);
      ADD_FAILURE() << "a run with another " << f.name << " fits the checkpoint";
    } catch (const core::UsageError& e) {
      const std::string want =
          std::string(f.name) + " = " + ddp::field_text(f, cfg) + " (this run: " + ddp::field_text(f, run) + ")";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  // The field the hand-written list had missed.
  ddp::TrainConfig nesterov = cfg;
  nesterov.optimizer.nesterov = true;
  try {
    check_compatible(c, nesterov, source);
    ADD_FAILURE() << "nesterov change accepted";
  } catch (const core::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("nesterov = false (this run: true)"), std::string::npos) << e.what();
  }
}

// Trains `cfg` for 2 steps and saves into `dir` (run identity `run_id`) with retention `keep`.
void save_run(MPI_Comm world, ddp::TrainConfig cfg, const std::string& dir, const std::string& run_id, int keep,
              std::int64_t steps, const std::string& path = "") {
  comm::Communicator comm(std::make_unique<comm::MpiBackend>(world));
  comm.attach_sync_comm(world);
  auto ops = kernels::make_cpu_ops(1);
  cfg.steps = steps;
  ddp::Trainer t(cfg, comm, *ops);
  t.setup();
  while (t.steps_done() < steps) t.step();
  SaveOptions o;
  o.dir = dir;
  o.backend = "mpi";
  o.keep = keep;
  o.run.run_id = run_id;
  o.path = path;
  save_checkpoint(world, t, o);
}

TEST(Checkpoint, AutoRefusesACheckpointThatDoesNotFit) {
  const MPI_Comm world = MPI_COMM_WORLD;
  const std::string dir = shared_tmpdir(world, "refuse");
  const ddp::TrainConfig cfg = small_config("naive");
  save_run(world, cfg, dir, "run-a", 3, 2);
  comm::Communicator comm(std::make_unique<comm::MpiBackend>(world));
  comm.attach_sync_comm(world);
  auto ops = kernels::make_cpu_ops(1);
  ddp::TrainConfig other_lr = cfg;
  other_lr.optimizer.lr = 0.002f;
  {
    ddp::Trainer t(other_lr, comm, *ops);
    t.setup();
    try {
      (void)resume(world, "auto", dir, t);
      ADD_FAILURE() << "auto resumed (or skipped) a checkpoint of another learning rate";
    } catch (const core::UsageError& e) {
      EXPECT_TRUE(e.agreed());
      EXPECT_NE(std::string(e.what()).find("lr = 0.001 (this run: 0.002)"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(std::filesystem::exists(checkpoint_path(dir, 2))) << "the refused checkpoint must stay";
    // Allowed: loaded, the change reported, the run's identity kept.
    const ResumeResult r = resume(world, ResumeRequest{"auto", dir, {"lr"}, ""}, t);
    EXPECT_TRUE(r.loaded);
    EXPECT_EQ(r.run.run_id, "run-a");
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    if (rank == 0) {
      ASSERT_EQ(r.changed.size(), 1u);
      EXPECT_EQ(r.changed[0].field, "lr");
      EXPECT_EQ(r.changed[0].saved, "0.001");
      EXPECT_EQ(r.changed[0].run, "0.002");
    }
  }
  ddp::TrainConfig other_seed = cfg;
  other_seed.seed = 6;
  ddp::Trainer t(other_seed, comm, *ops);
  t.setup();
  EXPECT_THROW((void)resume(world, ResumeRequest{"auto", dir, {"lr", "seed"}, ""}, t), core::UsageError)
      << "a seed is no learning-rate plan: never allowed to change";
  remove_dir(world, dir);
}

TEST(Checkpoint, RotationDeletesOnlyThisRunsCheckpoints) {
  const MPI_Comm world = MPI_COMM_WORLD;
  const std::string dir = shared_tmpdir(world, "rotate");
  const ddp::TrainConfig cfg = small_config("naive");
  save_run(world, cfg, dir, "run-a", 0, 1);
  save_run(world, cfg, dir, "run-a", 0, 2);
  save_run(world, cfg, dir, "run-b", 1, 3, best_checkpoint_path(dir));  // best.h5: no retention
  for (std::int64_t s : {3, 4, 5}) save_run(world, cfg, dir, "run-b", 1, s);
  MPI_Barrier(world);
  EXPECT_TRUE(std::filesystem::exists(checkpoint_path(dir, 1))) << "another run's checkpoint was deleted";
  EXPECT_TRUE(std::filesystem::exists(checkpoint_path(dir, 2))) << "another run's checkpoint was deleted";
  EXPECT_FALSE(std::filesystem::exists(checkpoint_path(dir, 3)));
  EXPECT_FALSE(std::filesystem::exists(checkpoint_path(dir, 4)));
  EXPECT_TRUE(std::filesystem::exists(checkpoint_path(dir, 5)));
  EXPECT_TRUE(std::filesystem::exists(best_checkpoint_path(dir)));
  EXPECT_EQ(read_checkpoint(best_checkpoint_path(dir)).run.run_id, "run-b");
  EXPECT_EQ(other_runs_checkpoints(dir, "run-b"), (std::vector<std::string>{checkpoint_path(dir, 2), checkpoint_path(dir, 1)}));
  remove_dir(world, dir);
}

TEST(Checkpoint, FormatVersion1StillReads) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  const std::string path = std::filesystem::temp_directory_path() / ("mddp_v1_" + std::to_string(::getpid()) + ".h5");
  CheckpointMeta v1;
  v1.format_version = 1;
  v1.steps_done = 2;
  v1.config = small_config("naive");
  v1.config.lr_schedule.kind = model::LrScheduleKind::Cosine;  // not a version-1 attribute: not written
  v1.data_position = 2 * v1.config.global_batch;
  v1.data_source = "synthetic";
  v1.run.run_id = "not written either";
  {
    const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    write_root_attributes(f, v1);
    H5Fclose(f);
  }
  const CheckpointMeta back = read_checkpoint_meta(path);
  EXPECT_EQ(back.format_version, 1);
  EXPECT_EQ(back.config.seed, v1.config.seed);
  EXPECT_EQ(back.config.lr_schedule.kind, model::LrScheduleKind::Constant);
  EXPECT_TRUE(back.run.run_id.empty());
  EXPECT_EQ(run_identity(back).rfind("v1-", 0), 0u) << run_identity(back);
  std::filesystem::remove(path);
}

// Needs 4 ranks: checkpoint at np 4, resume at np 2 and np 3 (sub-communicators).
TEST(WorldSizeChange, Np4ResumesOnTwoAndThreeRanks) {
  const MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0, size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (size != 4) GTEST_SKIP() << "needs exactly 4 ranks";
  for (const ddp::zero::ShardMode shard : {ddp::zero::ShardMode::None, ddp::zero::ShardMode::Optimizer}) {
    const std::string dir = shared_tmpdir(world, "ws");
    auto cfg = small_config("naive");
    cfg.shard = shard;  // sharded: saved at np 4 from shards, resumed into shards at np 2 and 3
    (void)train(world, cfg, 4, dir, 4);
    // Reference: the whole run uninterrupted on one process.
    TrainRun ref;
    { ref = train(MPI_COMM_SELF, cfg, 8, dir + "/unused", -1); }
    for (int n : {2, 3}) {
      MPI_Comm sub = MPI_COMM_NULL;
      MPI_Comm_split(world, rank < n ? 0 : MPI_UNDEFINED, rank, &sub);
      if (sub != MPI_COMM_NULL) {
        const TrainRun resumed = train(sub, cfg, 8, dir, -1, "auto");
        double max_diff = 0, max_ref = 0;
        for (std::size_t i = 0; i < ref.params.size(); ++i) {
          max_diff = std::max(max_diff, static_cast<double>(std::abs(resumed.params[i] - ref.params[i])));
          max_ref = std::max(max_ref, static_cast<double>(std::abs(ref.params[i])));
        }
        EXPECT_LE(max_diff, 1e-5 * max_ref) << "np 4 -> " << n << ", shard " << ddp::zero::shard_mode_name(shard);
        for (std::size_t s = 0; s < resumed.losses.size(); ++s) {
          EXPECT_NEAR(resumed.losses[s], ref.losses[4 + s], 1e-5 * std::abs(ref.losses[4 + s]))
              << "np 4 -> " << n << ", step " << 4 + s;
        }
        MPI_Comm_free(&sub);
      }
      MPI_Barrier(world);
    }
    remove_dir(world, dir);
  }
}

}  // namespace
}  // namespace microddp::io
