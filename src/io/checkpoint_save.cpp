// checkpoint_save.cpp — see checkpoint_save.hpp for the protocol.
#include "io/checkpoint_save.hpp"

#include <sys/stat.h>

#include <csignal>
#include <cstdio>

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "ddp/strategy.hpp"
#include "io/atomic_file.hpp"
#include "io/checkpoint_dir.hpp"
#include "io/checkpoint_load.hpp"
#include "io/checkpoint_ownership.hpp"
#include "io/checkpoint_schema.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"

namespace microddp::io {

namespace {

// A save fault point: the armed rank dies here as a crash would (no destructors, no flush).
void kill_point(const SaveOptions& opts, const char* point, int rank) {
  if (opts.faults.empty() || opts.faults.fires(point, rank, opts.save_number) == nullptr) return;
  std::fprintf(stderr, "microddp: fault injection: SIGKILL rank %d at '%s' of save %lld\n", rank, point,
               static_cast<long long>(opts.save_number));
  std::fflush(stderr);
  std::raise(SIGKILL);
}

// Broadcasts rank 0's outcome (ok or message) so every rank throws the same error.
void agree_on_root_outcome(MPI_Comm comm, int rank, const std::string& root_error) {
  std::int64_t len = rank == 0 ? static_cast<std::int64_t>(root_error.size()) : 0;
  MDDP_MPI_CHECK(MPI_Bcast(&len, 1, MPI_INT64_T, 0, comm));
  if (len == 0) return;
  std::string msg(static_cast<std::size_t>(len), '\0');
  if (rank == 0) msg = root_error;
  MDDP_MPI_CHECK(MPI_Bcast(msg.data(), comm::to_mpi_int(len), MPI_CHAR, 0, comm));
  MDDP_CHECK(false, msg);
}

struct WriteItem {
  std::string path;  // absolute dataset path
  const float* data;
  TensorSpec spec;
};

// Writes every item into an open file. parallel: all ranks call this (collective metadata and
// collective raw-data writes of disjoint row slices); otherwise only the writing rank does.
void write_items(hid_t file, const std::vector<WriteItem>& items, bool parallel, int rank, int size,
                 const SaveOptions& opts) {
  Hid lcpl(MDDP_HDF5_CHECK(H5Pcreate(H5P_LINK_CREATE)));
  MDDP_HDF5_CHECK(H5Pset_create_intermediate_group(lcpl, 1));
  Hid dxpl(MDDP_HDF5_CHECK(H5Pcreate(H5P_DATASET_XFER)));
  if (parallel) MDDP_HDF5_CHECK(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (k == items.size() / 2) kill_point(opts, "mid_write", rank);
    const auto& it = items[k];
    const int nd = it.spec.cols > 0 ? 2 : 1;
    const hsize_t dims[2] = {static_cast<hsize_t>(it.spec.rows), static_cast<hsize_t>(it.spec.cols)};
    Hid fspace(MDDP_HDF5_CHECK(H5Screate_simple(nd, dims, nullptr)));
    Hid dset(
        MDDP_HDF5_CHECK(H5Dcreate2(file, it.path.c_str(), H5T_IEEE_F32LE, fspace, lcpl, H5P_DEFAULT, H5P_DEFAULT)));
    // Disjoint balanced row slices: rank r writes rows [lo, hi) (none when rows < ranks).
    const std::int64_t rows = it.spec.rows;
    const std::int64_t lo = parallel ? rows * rank / size : 0;
    const std::int64_t hi = parallel ? rows * (rank + 1) / size : rows;
    const std::int64_t row_elems = it.spec.cols > 0 ? it.spec.cols : 1;
    const hsize_t mdims[1] = {static_cast<hsize_t>((hi - lo) * row_elems)};
    Hid mspace(MDDP_HDF5_CHECK(H5Screate_simple(1, mdims, nullptr)));
    if (hi > lo) {
      const hsize_t start[2] = {static_cast<hsize_t>(lo), 0};
      const hsize_t count[2] = {static_cast<hsize_t>(hi - lo), static_cast<hsize_t>(it.spec.cols)};
      MDDP_HDF5_CHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr));
    } else {
      MDDP_HDF5_CHECK(H5Sselect_none(fspace));
      MDDP_HDF5_CHECK(H5Sselect_none(mspace));
    }
    MDDP_HDF5_CHECK(H5Dwrite(dset, H5T_NATIVE_FLOAT, mspace, fspace, dxpl, it.data + lo * row_elems));
    // The checksum covers the whole tensor; every rank holds it (replicated), so all agree.
    write_attr_u64(dset, "fnv1a64", tensor_checksum(it.data, it.spec.count));
  }
}

}  // namespace

const std::vector<std::string>& save_fault_points() {
  static const std::vector<std::string> points = {"begin",        "created",         "mid_write",
                                                  "before_flush", "after_flush",     "after_fsync",
                                                  "after_rename", "after_dir_fsync", "mid_retention"};
  return points;
}

SaveResult save_checkpoint(MPI_Comm comm, const ddp::TrainState& trainer, const SaveOptions& opts) {
  hdf5_quiet();
  int rank = 0, size = 1;
  MDDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MDDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  const auto& cfg = trainer.config();
  const auto specs = tensor_specs(cfg.model);
  // Host copies of the parameters and optimizer state (the live buffers with CpuOps; a refreshed
  // host mirror when they live on a GPU).
  trainer.state_to_host();
  const ddp::TrainState::HostState& host = trainer.host_state();
  const auto& buffers = host.optimizer;
  std::vector<std::string> names;
  for (const auto& b : buffers) names.push_back(b.name);
  MDDP_CHECK(names == model::optimizer_state_names(cfg.optimizer),
             "optimizer state buffers " << join_names(names) << " are not the expected "
                                        << join_names(model::optimizer_state_names(cfg.optimizer)));

  SaveResult res;
  const bool own_path = !opts.path.empty();
  res.path = own_path ? opts.path : checkpoint_path(opts.dir, trainer.steps_done());
  const std::string tmp = temp_path(res.path);
  CheckpointMeta meta;
  meta.steps_done = trainer.steps_done();
  meta.data_position = trainer.data_position();
  meta.world_size = size;
  // The strategy as run, with the shard mode when sharded ("bucketed+shard=optimizer"): the file
  // itself is the same in every mode (the full optimizer state, gathered from the shards).
  meta.strategy = cfg.shard == ddp::zero::ShardMode::None
                      ? std::string(ddp::strategy_name(cfg.strategy))
                      : std::string(ddp::strategy_name(cfg.strategy)) +
                            "+shard=" + std::string(ddp::zero::shard_mode_name(cfg.shard));
  meta.backend = opts.backend;
  meta.data_source = trainer.data_description();
  meta.config = cfg;
  meta.run = opts.run;
  const CompressionSnapshot compression = snapshot_compression(comm, trainer);  // collective
  std::vector<WriteItem> items;
  for (const auto& s : specs) items.push_back({"/model/" + s.rel, host.params + s.offset, s});
  for (const auto& b : buffers) {
    MDDP_CHECK(b.count == host.param_count, "optimizer buffer " << b.name << " has " << b.count << " elements");
    for (const auto& s : specs) items.push_back({"/optimizer/" + b.name + "/" + s.rel, b.data + s.offset, s});
  }

  kill_point(opts, "begin", rank);
  const bool parallel = opts.writer == WriterMode::Parallel;
  core::Stopwatch sw;
  auto write_file = [&](bool par) {
    Hid fapl(MDDP_HDF5_CHECK(H5Pcreate(H5P_FILE_ACCESS)));
    if (par) {
      MDDP_HDF5_CHECK(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL));
      // Metadata reads/writes as collective operations (one writer of metadata, no storms).
      MDDP_HDF5_CHECK(H5Pset_all_coll_metadata_ops(fapl, true));
      MDDP_HDF5_CHECK(H5Pset_coll_metadata_write(fapl, true));
    }
    Hid file(MDDP_HDF5_CHECK(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl)));
    write_root_attributes(file, meta);
    {
      Hid lcpl(MDDP_HDF5_CHECK(H5Pcreate(H5P_LINK_CREATE)));
      MDDP_HDF5_CHECK(H5Pset_create_intermediate_group(lcpl, 1));
      Hid g(MDDP_HDF5_CHECK(H5Gcreate2(file, "/optimizer", lcpl, H5P_DEFAULT, H5P_DEFAULT)));
      write_attr(g, "name", cfg.optimizer.name);
      write_attr(g, "step_count", trainer.optimizer_steps());
      write_attr(g, "state_buffers", join_names(names));
    }
    write_compression_group(file, compression);
    kill_point(opts, "created", rank);
    write_items(file, items, par, par ? rank : 0, par ? size : 1, opts);
    kill_point(opts, "before_flush", rank);
    MDDP_HDF5_CHECK(H5Fflush(file, H5F_SCOPE_GLOBAL));
    file.reset();  // H5Fclose: collective in parallel mode
  };
  std::string root_error;
  if (parallel) {
    write_file(true);
  } else if (rank == 0) {
    try {
      write_file(false);
    } catch (const std::exception& e) {
      root_error = e.what();
    }
  }
  kill_point(opts, "after_flush", rank);
  res.write_s = sw.elapsed_s();

  // Publish (rank 0 only; everyone learns the outcome).
  sw = core::Stopwatch();
  if (rank == 0 && root_error.empty()) {
    try {
      publish(tmp, res.path, [&](PublishStep step) {
        switch (step) {
          case PublishStep::FileSynced:
            kill_point(opts, "after_fsync", rank);
            break;
          case PublishStep::Renamed:
            kill_point(opts, "after_rename", rank);
            break;
          case PublishStep::DirectorySynced:
            kill_point(opts, "after_dir_fsync", rank);
            break;
        }
      });
      res.publish_s = sw.elapsed_s();
      struct stat st {};
      if (::stat(res.path.c_str(), &st) == 0) res.bytes = static_cast<std::int64_t>(st.st_size);
      // Verify the published file before deleting anything older.
      sw = core::Stopwatch();
      if (opts.verify) (void)read_checkpoint(res.path);
      res.verify_s = sw.elapsed_s();
      // Retention: the new checkpoint is verified, so deleting beyond `keep` never removes the
      // only valid one; only this run's count (a file that cannot be read is nobody's: kept).
      // Stale temporaries (killed saves) go too.
      if (opts.keep > 0 && !own_path) {
        const std::string id = run_identity(meta);
        auto ours = [&id](const std::string& p) { return belongs_to_run(p, id); };
        res.deleted =
            remove_beyond_keep(opts.dir, opts.keep, res.path, ours, [&] { kill_point(opts, "mid_retention", rank); });
      }
      if (!own_path) remove_stale_temporaries(opts.dir);
    } catch (const std::exception& e) {
      root_error = e.what();
    }
  }
  agree_on_root_outcome(comm, rank, root_error.empty() ? root_error : "checkpoint save failed: " + root_error);
  return res;
}

}  // namespace microddp::io
