// checkpoint_load.cpp — verified read, compatibility, resume with broadcast.
#include "io/checkpoint_load.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "io/checkpoint_dir.hpp"
#include "io/checkpoint_schema.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"
#include "model/param_layout.hpp"

namespace microddp::io {

void broadcast_floats(MPI_Comm comm, float* p, std::int64_t n) {
  constexpr std::int64_t kChunk = std::int64_t{1} << 28;  // well below INT_MAX elements per call
  for (std::int64_t off = 0; off < n; off += kChunk) {
    MDDP_MPI_CHECK(MPI_Bcast(p + off, comm::to_mpi_int(std::min(kChunk, n - off)), MPI_FLOAT, 0, comm));
  }
}

CheckpointContents read_checkpoint(const std::string& path) {
  hdf5_quiet();
  struct stat st {};
  MDDP_USAGE_CHECK(::stat(path.c_str(), &st) == 0, "checkpoint " << path << ": " << std::strerror(errno));
  const htri_t is_h5 = H5Fis_hdf5(path.c_str());
  MDDP_USAGE_CHECK(
      is_h5 > 0, "checkpoint " << path << ": not an HDF5 file (" << st.st_size << " bytes; truncated or overwritten?)");
  const std::string file_ctx = "checkpoint " + path;
  Hid file(MDDP_HDF5_FILE_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), file_ctx,
                                "cannot open (truncated or corrupt file?)"));
  const CheckpointMeta meta = read_root_attributes(file, path);
  CheckpointContents c;
  c.path = path;
  c.format_version = meta.format_version;
  c.config = meta.config;
  c.data_source = meta.data_source;
  c.world_size = meta.world_size;
  c.strategy = meta.strategy;
  c.backend = meta.backend;
  c.steps_done = meta.steps_done;
  c.data_position = meta.data_position;
  c.run = meta.run;
  c.identity = run_identity(meta);

  const auto specs = tensor_specs(c.config.model);
  const std::int64_t total = model::flat_count(model::param_layout(c.config.model));
  // Reads one tensor into dst after checking existence, dtype, shape; then verifies its checksum.
  auto read_tensor = [&](const std::string& dpath, const TensorSpec& s, float* dst) {
    const std::string d = "checkpoint " + path + ": dataset " + dpath;
    MDDP_USAGE_CHECK(path_exists(file, dpath), d << " is missing");
    Hid dset(MDDP_HDF5_FILE_CHECK(H5Dopen2(file, dpath.c_str(), H5P_DEFAULT), d, "cannot open dataset"));
    Hid type(MDDP_HDF5_CHECK(H5Dget_type(dset)));
    MDDP_USAGE_CHECK(H5Tget_class(type) == H5T_FLOAT && H5Tget_size(type) == 4,
                     d << " has dtype " << type_name(type) << ", expected float32");
    const auto dims = dataset_dims(dset);
    const std::vector<std::int64_t> want =
        s.cols > 0 ? std::vector<std::int64_t>{s.rows, s.cols} : std::vector<std::int64_t>{s.rows};
    MDDP_USAGE_CHECK(dims == want, d << " has shape " << dims_string(dims) << ", expected " << dims_string(want));
    const std::uint64_t stored = read_attr_u64(dset, "fnv1a64", d + " attribute 'fnv1a64'");
    MDDP_HDF5_FILE_CHECK(H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst), d,
                         "cannot read data (truncated or corrupt file?)");
    const std::uint64_t computed = tensor_checksum(dst, s.count);
    MDDP_USAGE_CHECK(stored == computed, d << " checksum mismatch: stored fnv1a64 " << hex64(stored) << ", computed "
                                           << hex64(computed) << " (data corrupted)");
    c.datasets.push_back({dpath, dims, stored});
  };
  c.params.resize(static_cast<std::size_t>(total));
  for (const auto& s : specs) read_tensor("/model/" + s.rel, s, c.params.data() + s.offset);

  const std::string og = "checkpoint " + path + ": group /optimizer";
  MDDP_USAGE_CHECK(path_exists(file, "/optimizer"), og << " is missing");
  Hid g(MDDP_HDF5_FILE_CHECK(H5Gopen2(file, "/optimizer", H5P_DEFAULT), og, "cannot open group"));
  const std::string oname = read_attr_str(g, "name", og + " attribute 'name'");
  MDDP_USAGE_CHECK(oname == c.config.optimizer.name,
                   og << " attribute 'name' is '" << oname << "', expected '" << c.config.optimizer.name << "'");
  c.optimizer_steps = read_attr_i64(g, "step_count", og + " attribute 'step_count'");
  MDDP_USAGE_CHECK(c.optimizer_steps == c.steps_done, og << " attribute 'step_count' is " << c.optimizer_steps
                                                         << ", expected steps_done = " << c.steps_done);
  const std::string bufs = read_attr_str(g, "state_buffers", og + " attribute 'state_buffers'");
  const auto names = model::optimizer_state_names(c.config.optimizer);
  MDDP_USAGE_CHECK(bufs == join_names(names),
                   og << " attribute 'state_buffers' is '" << bufs << "', expected '" << join_names(names) << "'");
  for (const auto& n : names) {
    std::vector<float> buf(static_cast<std::size_t>(total));
    for (const auto& s : specs) read_tensor("/optimizer/" + n + "/" + s.rel, s, buf.data() + s.offset);
    c.optimizer_state.emplace_back(n, std::move(buf));
  }
  c.compression = read_compression_group(file, path);
  // The compression settings are configuration fields (resume rule) recorded in that group.
  if (c.compression.present) c.config.compression = c.compression.config;
  for (const auto& t : c.compression.tensors) {
    c.datasets.push_back(
        {"/compression/" + t.name,
         t.per_rank ? std::vector<std::int64_t>{c.compression.world_size, t.count} : std::vector<std::int64_t>{t.count},
         tensor_checksum(t.data.data(), static_cast<std::int64_t>(t.data.size()))});
  }
  return c;
}

void check_compatible(const CheckpointContents& c, const ddp::TrainConfig& cfg, const std::string& data_source) {
  const std::string bad = compatibility_problems(c.config, c.data_source, cfg, data_source);
  MDDP_USAGE_CHECK(bad.empty(), "checkpoint " << c.path << " does not fit this run: " << bad);
}

ResumeResult resume(MPI_Comm comm, const std::string& spec, const std::string& dir, ddp::TrainState& trainer) {
  return resume(comm, ResumeRequest{spec, dir, {}, ""}, trainer);
}

ResumeResult resume(MPI_Comm comm, const ResumeRequest& request, ddp::TrainState& trainer) {
  int rank = 0;
  MDDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const std::string& spec = request.spec;
  const std::string& dir = request.dir;
  const bool automatic = spec == "auto";
  ResumeResult res;
  CheckpointContents chosen;
  std::string error;  // a refusal or, for a path, an invalid file (rank 0)
  if (rank == 0) {
    const std::vector<std::string> candidates = automatic ? list_checkpoints(dir) : std::vector<std::string>{spec};
    if (automatic && candidates.empty()) res.notes.push_back("no checkpoint in " + dir + ": starting from step 0");
    for (const auto& path : candidates) {
      CheckpointContents c;
      try {
        c = read_checkpoint(path);
      } catch (const core::UsageError& e) {
        if (!automatic) {
          error = e.what();
          break;
        }
        res.notes.push_back(std::string(e.what()) + " -- skipped, trying an older checkpoint");
        continue;
      }
      // A valid checkpoint that does not fit is another run's (or this one's with other settings):
      // refused, never skipped, so that nothing of it is lost and the user decides.
      std::vector<ConfigDifference> refused;
      for (auto& d : config_differences(c.config, c.data_source, trainer.config(), trainer.data_description())) {
        const auto& allowed = request.allow_changed;
        if (d.changeable && std::find(allowed.begin(), allowed.end(), d.field) != allowed.end()) {
          res.changed.push_back(std::move(d));
        } else {
          refused.push_back(std::move(d));
        }
      }
      if (!refused.empty()) {
        error = "checkpoint " + path + " does not fit this run: " + differences_text(refused) + request.refusal_hint;
        res.changed.clear();
        break;
      }
      chosen = std::move(c);
      res.loaded = true;
      break;
    }
    if (automatic && !candidates.empty() && !res.loaded && error.empty()) {
      res.notes.push_back("no valid checkpoint in " + dir + ": starting from step 0");
    }
  }
  // Agree on the outcome: [status, steps_done, optimizer steps, world size at save].
  std::int64_t hdr[4] = {error.empty() ? (res.loaded ? 1 : 0) : 2, chosen.steps_done, chosen.optimizer_steps,
                         chosen.world_size};
  MDDP_MPI_CHECK(MPI_Bcast(hdr, 4, MPI_INT64_T, 0, comm));
  if (hdr[0] == 2) {
    std::int64_t len = static_cast<std::int64_t>(error.size());
    MDDP_MPI_CHECK(MPI_Bcast(&len, 1, MPI_INT64_T, 0, comm));
    error.resize(static_cast<std::size_t>(len));
    MDDP_MPI_CHECK(MPI_Bcast(error.data(), comm::to_mpi_int(len), MPI_CHAR, 0, comm));
    core::throw_usage_error(error, /*agreed=*/true);
  }
  if (hdr[0] == 0) return res;
  res.loaded = true;
  res.path = chosen.path;
  res.steps_done = hdr[1];
  // The run record on every rank (a parallel save writes it collectively): with its identity as
  // run_id, so that a run resumed from a format-1 file keeps that file's identity.
  res.run = chosen.run;
  res.run.run_id = chosen.identity;
  broadcast_run_info(comm, res.run);
  int size = 1;
  MDDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (rank == 0 && chosen.world_size != size) {
    res.notes.push_back("checkpoint was written by " + std::to_string(chosen.world_size) + " ranks, resuming on " +
                        std::to_string(size) + " (same global batch, so the same samples)");
  }
  // Staging -> model and optimizer (rank 0 copies, then everyone receives the broadcast).
  // Into the host view (the live buffers with CpuOps, the host mirror on a GPU), uploaded below.
  const ddp::TrainState::HostState& host = trainer.host_state();
  if (rank == 0) std::memcpy(host.params, chosen.params.data(), chosen.params.size() * sizeof(float));
  broadcast_floats(comm, host.params, host.param_count);
  const auto& buffers = host.optimizer;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (rank == 0) {
      MDDP_CHECK(i < chosen.optimizer_state.size() && chosen.optimizer_state[i].first == buffers[i].name &&
                     static_cast<std::int64_t>(chosen.optimizer_state[i].second.size()) == buffers[i].count,
                 "optimizer state " << buffers[i].name << " missing from the verified checkpoint");
      std::memcpy(buffers[i].data, chosen.optimizer_state[i].second.data(),
                  static_cast<std::size_t>(buffers[i].count) * sizeof(float));
    }
    broadcast_floats(comm, buffers[i].data, buffers[i].count);
  }
  trainer.state_from_host();
  const std::string note = restore_compression(comm, chosen.compression, trainer);  // collective
  if (rank == 0 && !note.empty()) res.notes.push_back(note);
  trainer.restore_progress(hdr[1], hdr[2]);
  return res;
}

}  // namespace microddp::io
