// model_weights.cpp — weights from a checkpoint or an export; the shape check; the collective load.
#include "io/model_weights.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "io/checkpoint_load.hpp"
#include "io/checkpoint_schema.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"
#include "io/model_export.hpp"

namespace microddp::io {

namespace {

std::string shape_text(const TensorSpec& s) {
  return s.cols > 0 ? "(" + std::to_string(s.rows) + ", " + std::to_string(s.cols) + ")"
                    : "(" + std::to_string(s.rows) + ",)";
}

std::string model_text(const model::MlpConfig& m) {
  std::ostringstream os;
  os << "in_dim " << m.in_dim << ", width " << m.width << ", depth " << m.depth << ", classes " << m.classes;
  return os.str();
}

ModelWeights read_export(const std::string& path, hid_t file) {
  const std::string ctx = "--init-from " + path;
  auto where = [&](const char* n) { return ctx + ": attribute '" + n + "'"; };
  const std::int64_t version = read_attr_i64(file, "format_version", where("format_version"));
  MDDP_USAGE_CHECK(version == kModelFormatVersion,
                   ctx << ": exported model format_version " << version << ", this build reads " << kModelFormatVersion);
  ModelWeights w;
  w.path = path;
  w.kind = "export";
  w.config.in_dim = read_attr_i64(file, "in_dim", where("in_dim"));
  w.config.width = read_attr_i64(file, "width", where("width"));
  w.config.depth = read_attr_i64(file, "depth", where("depth"));
  w.config.classes = read_attr_i64(file, "classes", where("classes"));
  w.steps_done = read_attr_i64(file, "steps_done", where("steps_done"));
  // Bounds as a checkpoint's (checkpoint_schema.cpp), before anything is sized from them.
  constexpr std::int64_t kMaxLayerDim = 1 << 24, kMaxLayers = 4096;
  const auto& m = w.config;
  MDDP_USAGE_CHECK(m.in_dim >= 1 && m.in_dim <= kMaxLayerDim && m.width >= 1 && m.width <= kMaxLayerDim && m.depth >= 1 &&
                       m.depth <= kMaxLayers && m.classes >= 2 && m.classes <= kMaxLayerDim,
                   ctx << ": implausible model shape (" << model_text(m) << ")");
  const std::vector<TensorSpec> specs = tensor_specs(w.config);
  w.params.assign(static_cast<std::size_t>(model::flat_count(model::param_layout(w.config))), 0.0f);
  for (const auto& s : specs) {
    const std::string d = ctx + ": dataset /" + s.rel;
    MDDP_USAGE_CHECK(path_exists(file, "/" + s.rel), d << " is missing");
    Hid dset(MDDP_HDF5_FILE_CHECK(H5Dopen2(file, ("/" + s.rel).c_str(), H5P_DEFAULT), d, "cannot open dataset"));
    Hid type(MDDP_HDF5_CHECK(H5Dget_type(dset)));
    MDDP_USAGE_CHECK(H5Tget_class(type) == H5T_FLOAT && H5Tget_size(type) == 4,
                     d << " has dtype " << type_name(type) << ", expected float32");
    const std::vector<std::int64_t> want =
        s.cols > 0 ? std::vector<std::int64_t>{s.rows, s.cols} : std::vector<std::int64_t>{s.rows};
    const auto dims = dataset_dims(dset);
    MDDP_USAGE_CHECK(dims == want, d << " has shape " << dims_string(dims) << ", expected " << dims_string(want)
                                     << " (the file's " << model_text(m) << ")");
    MDDP_HDF5_FILE_CHECK(H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, w.params.data() + s.offset),
                         d, "cannot read data (truncated or corrupt file?)");
  }
  return w;
}

}  // namespace

ModelWeights read_model_weights(const std::string& path) {
  hdf5_quiet();
  const std::string ctx = "--init-from " + path;
  MDDP_USAGE_CHECK(H5Fis_hdf5(path.c_str()) > 0, ctx << ": not an HDF5 file (a checkpoint or `microddp export` output)");
  std::string format;
  {
    Hid file(MDDP_HDF5_FILE_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), ctx, "cannot open"));
    format = read_attr_str(file, "format", ctx + ": attribute 'format'");
    if (format == kModelFormat) return read_export(path, file);
  }
  MDDP_USAGE_CHECK(format == kCheckpointFormat, ctx << ": format '" << format << "' is neither a checkpoint ('"
                                                    << kCheckpointFormat << "') nor an exported model ('"
                                                    << kModelFormat << "')");
  CheckpointContents c = read_checkpoint(path);
  ModelWeights w;
  w.path = path;
  w.kind = "checkpoint";
  w.config = c.config.model;
  w.params = std::move(c.params);
  w.steps_done = c.steps_done;
  return w;
}

void check_weights_fit(const ModelWeights& w, const model::MlpConfig& run) {
  // In layer order (the specs come in gradient-ready order, the last layer first): the first tensor
  // named is the first that differs going forward.
  std::vector<TensorSpec> have = tensor_specs(w.config), want = tensor_specs(run);
  auto key = [](const TensorSpec& t) {  // "layer_00/0" for the weight, "layer_00/1" for the bias
    const std::size_t slash = t.rel.find('/');
    return t.rel.substr(0, slash) + (t.rel.compare(slash + 1, std::string::npos, "weight") == 0 ? "/0" : "/1");
  };
  auto by_name = [&key](const TensorSpec& a, const TensorSpec& b) { return key(a) < key(b); };
  std::sort(have.begin(), have.end(), by_name);
  std::sort(want.begin(), want.end(), by_name);
  const std::string ctx = "--init-from " + w.path;
  MDDP_USAGE_CHECK(have.size() == want.size(), ctx << " holds " << have.size() / 2 << " layers (" << model_text(w.config)
                                                   << "), this run's model has " << want.size() / 2 << " ("
                                                   << model_text(run) << ")");
  for (std::size_t i = 0; i < have.size(); ++i) {
    MDDP_USAGE_CHECK(have[i].rel == want[i].rel && have[i].rows == want[i].rows && have[i].cols == want[i].cols,
                     ctx << ": " << have[i].rel << " has shape " << shape_text(have[i]) << ", this run's model needs "
                         << shape_text(want[i]) << " (file: " << model_text(w.config) << "; this run: "
                         << model_text(run) << ")");
  }
}

std::string load_weights(MPI_Comm comm, const std::string& path, ddp::TrainState& trainer) {
  int rank = 0;
  MDDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  ModelWeights w;
  std::string error;
  if (rank == 0) {
    try {
      w = read_model_weights(path);
      check_weights_fit(w, trainer.config().model);
    } catch (const core::UsageError& e) {
      error = e.what();
    }
  }
  std::int64_t hdr[2] = {static_cast<std::int64_t>(error.size()), w.steps_done};
  MDDP_MPI_CHECK(MPI_Bcast(hdr, 2, MPI_INT64_T, 0, comm));
  if (hdr[0] > 0) {
    error.resize(static_cast<std::size_t>(hdr[0]));
    MDDP_MPI_CHECK(MPI_Bcast(error.data(), comm::to_mpi_int(hdr[0]), MPI_CHAR, 0, comm));
    core::throw_usage_error(error, /*agreed=*/true);
  }
  std::string kind = w.kind;
  std::int64_t kind_export = kind == "export" ? 1 : 0;
  MDDP_MPI_CHECK(MPI_Bcast(&kind_export, 1, MPI_INT64_T, 0, comm));
  kind = kind_export != 0 ? "export" : "checkpoint";
  // Only the parameters: the host view is refreshed first, so the optimizer state uploaded with
  // them is this run's own (fresh) one.
  trainer.state_to_host();
  const ddp::TrainState::HostState& host = trainer.host_state();
  if (rank == 0) std::memcpy(host.params, w.params.data(), w.params.size() * sizeof(float));
  broadcast_floats(comm, host.params, host.param_count);
  trainer.state_from_host();
  trainer.restore_progress(0, 0);  // collective: every rank now holds the same parameters
  return "weights from " + path + " (" + kind + ", after " + std::to_string(hdr[1]) + " steps)";
}

}  // namespace microddp::io
