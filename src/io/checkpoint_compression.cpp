// checkpoint_compression.cpp — the /compression group (see checkpoint_compression.hpp).
#include "io/checkpoint_compression.hpp"

#include <cstring>

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "io/checkpoint_schema.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"

namespace microddp::io {

namespace {
constexpr const char* kGroup = "/compression";
// Every state tensor any compressor has (ddp::CompressorState names).
constexpr const char* kStateNames[] = {"powersgd_q", "error_feedback"};

void gather_floats(MPI_Comm comm, const float* mine, std::int64_t count, float* all) {
  // One rank's state is far below INT_MAX floats for every model we build (checked, not assumed).
  MDDP_MPI_CHECK(
      MPI_Allgather(mine, comm::to_mpi_int(count), MPI_FLOAT, all, comm::to_mpi_int(count), MPI_FLOAT, comm));
}
}  // namespace

CompressionSnapshot snapshot_compression(MPI_Comm comm, const ddp::TrainState& trainer) {
  CompressionSnapshot s;
  ddp::GradCompressor* c = trainer.compressor();
  if (c == nullptr) return s;
  int size = 1;
  MDDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  s.present = true;
  s.config = trainer.config().compression;
  s.world_size = size;
  c->state_to_host();
  for (const ddp::CompressorState& st : c->state()) {
    CompressionSnapshot::Tensor t{st.name, st.per_rank, st.count, {}};
    if (st.per_rank) {
      t.data.resize(static_cast<std::size_t>(st.count * size));
      gather_floats(comm, st.data, st.count, t.data.data());
    } else {
      t.data.assign(st.data, st.data + st.count);
    }
    s.tensors.push_back(std::move(t));
  }
  return s;
}

void write_compression_group(hid_t file, const CompressionSnapshot& s) {
  if (!s.present) return;
  Hid g(MDDP_HDF5_CHECK(H5Gcreate2(file, kGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  write_attr(g, "mode", std::string(ddp::compression_mode_name(s.config.mode)));
  write_attr(g, "powersgd_rank", s.config.powersgd_rank);
  write_attr(g, "powersgd_start_step", s.config.powersgd_start_step);
  write_attr(g, "error_feedback", static_cast<std::int64_t>(s.config.error_feedback ? 1 : 0));
  write_attr(g, "world_size", s.world_size);
  for (const auto& t : s.tensors) {
    const int nd = t.per_rank ? 2 : 1;
    const hsize_t dims[2] = {static_cast<hsize_t>(t.per_rank ? s.world_size : t.count), static_cast<hsize_t>(t.count)};
    Hid space(MDDP_HDF5_CHECK(H5Screate_simple(nd, dims, nullptr)));
    const std::string path = std::string(kGroup) + "/" + t.name;
    Hid dset(
        MDDP_HDF5_CHECK(H5Dcreate2(file, path.c_str(), H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    if (!t.data.empty())
      MDDP_HDF5_CHECK(H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data.data()));
    write_attr_u64(dset, "fnv1a64", tensor_checksum(t.data.data(), static_cast<std::int64_t>(t.data.size())));
  }
}

CompressionSnapshot read_compression_group(hid_t file, const std::string& path) {
  CompressionSnapshot s;
  if (!path_exists(file, kGroup)) return s;
  const std::string where = "checkpoint " + path + ": group " + kGroup;
  Hid g(MDDP_HDF5_FILE_CHECK(H5Gopen2(file, kGroup, H5P_DEFAULT), where, "cannot open group"));
  s.present = true;
  const std::string mode = read_attr_str(g, "mode", where + " attribute 'mode'");
  s.config.powersgd_rank = read_attr_i64(g, "powersgd_rank", where + " attribute 'powersgd_rank'");
  s.config.powersgd_start_step = read_attr_i64(g, "powersgd_start_step", where + " attribute 'powersgd_start_step'");
  s.config.error_feedback = read_attr_i64(g, "error_feedback", where + " attribute 'error_feedback'") != 0;
  s.world_size = read_attr_i64(g, "world_size", where + " attribute 'world_size'");
  MDDP_USAGE_CHECK(s.world_size >= 1 && s.world_size <= (1 << 24),
                   where << " attribute 'world_size' is " << s.world_size);
  try {
    s.config.mode = ddp::parse_compression_mode(mode);
    ddp::validate_compression(s.config);
  } catch (const core::UsageError& e) {
    MDDP_USAGE_CHECK(false, where << ": " << e.what());
  }
  for (const char* name : kStateNames) {
    const std::string dpath = std::string(kGroup) + "/" + name;
    if (!path_exists(file, dpath)) continue;  // which ones a mode has: restore_compression checks
    const std::string d = "checkpoint " + path + ": dataset " + dpath;
    Hid dset(MDDP_HDF5_FILE_CHECK(H5Dopen2(file, dpath.c_str(), H5P_DEFAULT), d, "cannot open dataset"));
    Hid type(MDDP_HDF5_CHECK(H5Dget_type(dset)));
    MDDP_USAGE_CHECK(H5Tget_class(type) == H5T_FLOAT && H5Tget_size(type) == 4,
                     d << " has dtype " << type_name(type) << ", expected float32");
    const auto dims = dataset_dims(dset);
    MDDP_USAGE_CHECK(dims.size() == 1 || (dims.size() == 2 && dims[0] == s.world_size),
                     d << " has shape " << dims_string(dims) << ", expected (count,) or (world_size, count)");
    CompressionSnapshot::Tensor t;
    t.name = name;
    t.per_rank = dims.size() == 2;
    t.count = dims.back();
    t.data.resize(static_cast<std::size_t>(t.per_rank ? dims[0] * dims[1] : dims[0]));
    if (!t.data.empty()) {
      MDDP_HDF5_FILE_CHECK(H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data.data()), d,
                           "cannot read data (truncated or corrupt file?)");
    }
    const std::uint64_t stored = read_attr_u64(dset, "fnv1a64", d + " attribute 'fnv1a64'");
    const std::uint64_t computed = tensor_checksum(t.data.data(), static_cast<std::int64_t>(t.data.size()));
    MDDP_USAGE_CHECK(stored == computed, d << " checksum mismatch: stored fnv1a64 " << hex64(stored) << ", computed "
                                           << hex64(computed) << " (data corrupted)");
    s.tensors.push_back(std::move(t));
  }
  return s;
}

std::string restore_compression(MPI_Comm comm, const CompressionSnapshot& s, ddp::TrainState& trainer) {
  ddp::GradCompressor* c = trainer.compressor();
  if (c == nullptr) return "";
  int rank = 0, size = 1;
  MDDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MDDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::int64_t saved_world = rank == 0 ? (s.present ? s.world_size : 0) : 0;
  MDDP_MPI_CHECK(MPI_Bcast(&saved_world, 1, MPI_INT64_T, 0, comm));
  std::string note;
  const std::vector<ddp::CompressorState> state = c->state();  // host views of this run's state
  for (const ddp::CompressorState& st : state) {
    const CompressionSnapshot::Tensor* t = nullptr;
    if (rank == 0) {
      for (const auto& x : s.tensors) {
        if (x.name == st.name) t = &x;
      }
      MDDP_USAGE_CHECK(t != nullptr && t->count == st.count && t->per_rank == st.per_rank,
                       "checkpoint compression state '" << st.name << "' is missing or has another shape (" << st.count
                                                        << " elements expected)");
    }
    if (!st.per_rank) {
      if (rank == 0) std::memcpy(st.data, t->data.data(), static_cast<std::size_t>(st.count) * sizeof(float));
      MDDP_MPI_CHECK(MPI_Bcast(st.data, comm::to_mpi_int(st.count), MPI_FLOAT, 0, comm));
    } else if (saved_world == size) {
      MDDP_MPI_CHECK(MPI_Scatter(rank == 0 ? t->data.data() : nullptr, comm::to_mpi_int(st.count), MPI_FLOAT, st.data,
                                 comm::to_mpi_int(st.count), MPI_FLOAT, 0, comm));
    } else {
      std::memset(st.data, 0, static_cast<std::size_t>(st.count) * sizeof(float));
      note = "compression state '" + st.name + "' was written by " + std::to_string(saved_world) +
             " ranks: restarted from zero on " + std::to_string(size);
    }
  }
  c->state_from_host();
  return note;
}

}  // namespace microddp::io
