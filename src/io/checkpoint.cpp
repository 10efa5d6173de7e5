// checkpoint.cpp — see checkpoint.hpp for the schema and the protocol.
#include "core/hash.hpp"
#include "io/checkpoint.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "comm/mpi_check.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"
#include "model/param_layout.hpp"

namespace microddp::io {

namespace {

// ---------------------------------------------------------------- layout ---------------------
// One tensor of the checkpoint: its dataset path relative to /model (or /optimizer/<buffer>),
// "layer_03/weight", and its place in the flat buffers. Derived from model::param_layout, the
// model's own layout (so inspect and load need no model).
struct TensorSpec {
  std::string rel;
  std::int64_t offset = 0, count = 0, rows = 0, cols = 0;  // cols == 0: 1-D (bias)
};

std::vector<TensorSpec> tensor_specs(const model::MlpConfig& m) {
  std::vector<TensorSpec> out;
  for (const auto& p : model::param_layout(m)) {
    std::string rel = p.name;
    std::replace(rel.begin(), rel.end(), '.', '/');
    out.push_back({rel, p.offset, p.count, p.rows, p.is_bias ? 0 : p.cols});
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

std::uint64_t fnv(const float* p, std::int64_t count) {
  return core::fnv1a64(p, static_cast<std::size_t>(count) * sizeof(float));
}

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}

// ---------------------------------------------------------------- root attributes ------------
struct Attr {
  enum Kind { I64, U64, F64, Str } kind = I64;
  std::string name;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double f = 0;
  std::string s;
};

struct Meta {
  std::string format = kCheckpointFormat;
  std::int64_t format_version = kCheckpointFormatVersion;
  std::int64_t steps_done = 0, data_position = 0, world_size = 0;
  std::string strategy, backend, data_source;
  ddp::TrainConfig config;
};

constexpr const char* kRngDescription =
    "philox4x32-10 counter-based (core/rng.hpp): every random value is a pure function of (seed, stream, "
    "counter); the only RNG state is the seed and data_position";

// The root attributes in a fixed order; the digest covers exactly this list.
std::vector<Attr> to_attrs(const Meta& m) {
  const auto& c = m.config;
  auto make = [](Attr::Kind k, const char* n) {
    Attr a;
    a.kind = k;
    a.name = n;
    return a;
  };
  auto I = [&](const char* n, std::int64_t v) { Attr a = make(Attr::I64, n); a.i = v; return a; };
  auto F = [&](const char* n, double v) { Attr a = make(Attr::F64, n); a.f = v; return a; };
  auto S = [&](const char* n, std::string v) { Attr a = make(Attr::Str, n); a.s = std::move(v); return a; };
  Attr seed = make(Attr::U64, "seed");
  seed.u = c.seed;
  return {S("format", m.format),
          I("format_version", m.format_version),
          I("steps_done", m.steps_done),
          I("data_position", m.data_position),
          I("world_size", m.world_size),
          S("strategy", m.strategy),
          S("backend", m.backend),
          S("data_source", m.data_source),
          S("rng", kRngDescription),
          seed,
          I("in_dim", c.model.in_dim),
          I("width", c.model.width),
          I("depth", c.model.depth),
          I("classes", c.model.classes),
          I("global_batch", c.global_batch),
          I("accum_steps", c.accum_steps),
          I("steps", c.steps),
          F("bucket_mb", c.sync_options.bucket_mb),
          F("first_bucket_mb", c.sync_options.first_bucket_mb),
          S("optimizer", c.optimizer.name),
          F("lr", c.optimizer.lr),
          F("beta1", c.optimizer.beta1),
          F("beta2", c.optimizer.beta2),
          F("eps", c.optimizer.eps),
          F("weight_decay", c.optimizer.weight_decay),
          F("momentum", c.optimizer.momentum),
          I("nesterov", c.optimizer.nesterov ? 1 : 0)};
}

// FNV-1a over "name=value;" with exact encodings (%a for doubles), so any changed bit shows.
std::uint64_t attrs_digest(const std::vector<Attr>& attrs) {
  std::string s;
  char b[64];
  for (const auto& a : attrs) {
    s += a.name + "=";
    switch (a.kind) {
      case Attr::I64: s += std::to_string(a.i); break;
      case Attr::U64: s += std::to_string(a.u); break;
      case Attr::F64: std::snprintf(b, sizeof b, "%a", a.f); s += b; break;
      case Attr::Str: s += a.s; break;
    }
    s += ";";
  }
  return core::fnv1a64(s.data(), s.size());
}

void write_attrs(hid_t obj, const std::vector<Attr>& attrs) {
  for (const auto& a : attrs) {
    switch (a.kind) {
      case Attr::I64: write_attr(obj, a.name.c_str(), a.i); break;
      case Attr::U64: write_attr_u64(obj, a.name.c_str(), a.u); break;
      case Attr::F64: write_attr(obj, a.name.c_str(), a.f); break;
      case Attr::Str: write_attr(obj, a.name.c_str(), a.s); break;
    }
  }
  write_attr_u64(obj, "meta_fnv1a64", attrs_digest(attrs));
}

Meta read_meta(hid_t root, const std::string& file) {
  auto where = [&](const std::string& n) { return "checkpoint " + file + ": attribute '" + n + "'"; };
  const std::string format = read_attr_str(root, "format", where("format"));
  MDDP_USAGE_CHECK(format == kCheckpointFormat,
                   where("format") << " is '" << format << "', expected '" << kCheckpointFormat << "' (not a microddp checkpoint)");
  const std::int64_t version = read_attr_i64(root, "format_version", where("format_version"));
  MDDP_USAGE_CHECK(version == kCheckpointFormatVersion, "checkpoint " << file << ": format_version is " << version
                                                                      << ", this build reads version " << kCheckpointFormatVersion);
  const Meta names_only;  // values unused: the list gives names and kinds
  std::vector<Attr> attrs = to_attrs(names_only);
  for (auto& a : attrs) {
    switch (a.kind) {
      case Attr::I64: a.i = read_attr_i64(root, a.name.c_str(), where(a.name)); break;
      case Attr::U64: a.u = read_attr_u64(root, a.name.c_str(), where(a.name)); break;
      case Attr::F64: a.f = read_attr_f64(root, a.name.c_str(), where(a.name)); break;
      case Attr::Str: a.s = read_attr_str(root, a.name.c_str(), where(a.name)); break;
    }
  }
  const std::uint64_t stored = read_attr_u64(root, "meta_fnv1a64", where("meta_fnv1a64"));
  const std::uint64_t computed = attrs_digest(attrs);
  MDDP_USAGE_CHECK(stored == computed, "checkpoint " << file << ": attribute digest mismatch (meta_fnv1a64 stored "
                                                     << hex(stored) << ", computed " << hex(computed)
                                                     << "): root attributes are corrupted or were edited");
  std::map<std::string, const Attr*> by;
  for (const auto& a : attrs) by[a.name] = &a;
  Meta m;
  m.format = format;
  m.format_version = version;
  m.steps_done = by["steps_done"]->i;
  m.data_position = by["data_position"]->i;
  m.world_size = by["world_size"]->i;
  m.strategy = by["strategy"]->s;
  m.backend = by["backend"]->s;
  m.data_source = by["data_source"]->s;
  auto& c = m.config;
  c.seed = by["seed"]->u;
  c.model.in_dim = by["in_dim"]->i;
  c.model.width = by["width"]->i;
  c.model.depth = by["depth"]->i;
  c.model.classes = by["classes"]->i;
  c.global_batch = by["global_batch"]->i;
  c.accum_steps = by["accum_steps"]->i;
  c.steps = by["steps"]->i;
  c.sync_options.bucket_mb = by["bucket_mb"]->f;
  c.sync_options.first_bucket_mb = by["first_bucket_mb"]->f;
  c.optimizer.name = by["optimizer"]->s;
  c.optimizer.lr = static_cast<float>(by["lr"]->f);
  c.optimizer.beta1 = static_cast<float>(by["beta1"]->f);
  c.optimizer.beta2 = static_cast<float>(by["beta2"]->f);
  c.optimizer.eps = static_cast<float>(by["eps"]->f);
  c.optimizer.weight_decay = static_cast<float>(by["weight_decay"]->f);
  c.optimizer.momentum = static_cast<float>(by["momentum"]->f);
  c.optimizer.nesterov = by["nesterov"]->i != 0;
  // Plausibility (the digest matched, but a file can be crafted): bounds as in train_options.cpp.
  constexpr std::int64_t kMaxDim = 1 << 24, kMaxDepth = 4096;
  auto in_range = [&](const char* n, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    MDDP_USAGE_CHECK(v >= lo && v <= hi, where(n) << " is " << v << ", outside [" << lo << ", " << hi << "]");
  };
  in_range("in_dim", c.model.in_dim, 1, kMaxDim);
  in_range("width", c.model.width, 1, kMaxDim);
  in_range("depth", c.model.depth, 1, kMaxDepth);
  in_range("classes", c.model.classes, 2, kMaxDim);
  in_range("global_batch", c.global_batch, 1, kMaxDim);
  in_range("accum_steps", c.accum_steps, 1, kMaxDim);
  in_range("steps_done", m.steps_done, 0, std::int64_t{1} << 40);
  MDDP_USAGE_CHECK(m.data_position == m.steps_done * c.accum_steps * c.global_batch,
                   where("data_position") << " is " << m.data_position << ", expected steps_done x accum_steps x global_batch = "
                                          << m.steps_done * c.accum_steps * c.global_batch);
  return m;
}

// ---------------------------------------------------------------- fault injection ------------
int g_save_number = 0;  // saves started by this process (1-based once a save starts)

void fault_point(const char* point, int rank) {
  static const char* at = std::getenv("MICRODDP_FAULT_KILL_AT");
  if (at == nullptr || std::strcmp(at, point) != 0) return;
  const char* save = std::getenv("MICRODDP_FAULT_KILL_SAVE");
  const char* who = std::getenv("MICRODDP_FAULT_KILL_RANK");
  if ((save ? std::atoi(save) : 1) != g_save_number || (who ? std::atoi(who) : 0) != rank) return;
  std::fprintf(stderr, "microddp: fault injection: SIGKILL rank %d at '%s' of save %d\n", rank, point, g_save_number);
  std::fflush(stderr);
  std::raise(SIGKILL);
}

// ---------------------------------------------------------------- POSIX helpers --------------
void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  MDDP_CHECK(fd >= 0, "cannot open " << path << " to fsync it: " << std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  MDDP_CHECK(rc == 0, "fsync(" << path << ") failed: " << std::strerror(err));
}

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : (slash == 0 ? std::string("/") : path.substr(0, slash));
}

bool parse_checkpoint_name(const std::string& name, std::int64_t& step) {
  // ckpt_<10 digits>.h5 exactly.
  if (name.size() != 5 + 10 + 3 || name.rfind("ckpt_", 0) != 0 || name.substr(15) != ".h5") return false;
  step = 0;
  for (std::size_t i = 5; i < 15; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    step = step * 10 + (name[i] - '0');
  }
  return true;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  return names;
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

void bcast_floats(MPI_Comm comm, float* p, std::int64_t n) {
  constexpr std::int64_t kChunk = std::int64_t{1} << 28;  // well below INT_MAX elements per call
  for (std::int64_t off = 0; off < n; off += kChunk) {
    MDDP_MPI_CHECK(MPI_Bcast(p + off, comm::to_mpi_int(std::min(kChunk, n - off)), MPI_FLOAT, 0, comm));
  }
}

// ---------------------------------------------------------------- writing --------------------
struct WriteItem {
  std::string path;  // absolute dataset path
  const float* data;
  TensorSpec spec;
};

// Writes every item into an open file. parallel: all ranks call this (collective metadata and
// collective raw-data writes of disjoint row slices); otherwise only the writing rank does.
void write_items(hid_t file, const std::vector<WriteItem>& items, bool parallel, int rank, int size) {
  Hid lcpl(MDDP_HDF5_CHECK(H5Pcreate(H5P_LINK_CREATE)));
  MDDP_HDF5_CHECK(H5Pset_create_intermediate_group(lcpl, 1));
  Hid dxpl(MDDP_HDF5_CHECK(H5Pcreate(H5P_DATASET_XFER)));
  if (parallel) MDDP_HDF5_CHECK(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (k == items.size() / 2) fault_point("mid_write", rank);
    const auto& it = items[k];
    const int nd = it.spec.cols > 0 ? 2 : 1;
    const hsize_t dims[2] = {static_cast<hsize_t>(it.spec.rows), static_cast<hsize_t>(it.spec.cols)};
    Hid fspace(MDDP_HDF5_CHECK(H5Screate_simple(nd, dims, nullptr)));
    Hid dset(MDDP_HDF5_CHECK(H5Dcreate2(file, it.path.c_str(), H5T_IEEE_F32LE, fspace, lcpl, H5P_DEFAULT, H5P_DEFAULT)));
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
    write_attr_u64(dset, "fnv1a64", fnv(it.data, it.spec.count));
  }
}

}  // namespace

const std::vector<std::string>& fault_points() {
  static const std::vector<std::string> points = {"begin",       "created",      "mid_write",   "before_flush",
                                                  "after_flush", "after_fsync",  "after_rename", "after_dir_fsync",
                                                  "mid_retention"};
  return points;
}

std::string checkpoint_path(const std::string& dir, std::int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "ckpt_%010lld.h5", static_cast<long long>(step));
  return (dir.empty() ? std::string(".") : dir) + "/" + name;
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  for (const auto& n : list_dir(dir)) {
    std::int64_t step = 0;
    if (parse_checkpoint_name(n, step)) found.emplace_back(step, dir + "/" + n);
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

SaveResult save_checkpoint(MPI_Comm comm, const ddp::Trainer& trainer, const SaveOptions& opts) {
  hdf5_quiet();
  int rank = 0, size = 1;
  MDDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MDDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  ++g_save_number;
  const auto& cfg = trainer.config();
  const auto specs = tensor_specs(cfg.model);
  // Host copies of the parameters and optimizer state (the live buffers with CpuOps; a refreshed
  // host mirror when they live on a GPU).
  trainer.state_to_host();
  const ddp::Trainer::HostState& host = trainer.host_state();
  const auto& buffers = host.optimizer;
  std::vector<std::string> names;
  for (const auto& b : buffers) names.push_back(b.name);
  MDDP_CHECK(names == model::optimizer_state_names(cfg.optimizer),
             "optimizer state buffers " << join(names) << " are not the expected "
                                        << join(model::optimizer_state_names(cfg.optimizer)));

  SaveResult res;
  res.path = checkpoint_path(opts.dir, trainer.steps_done());
  const std::string tmp = res.path + ".tmp";
  Meta meta;
  meta.steps_done = trainer.steps_done();
  meta.data_position = trainer.data_position();
  meta.world_size = size;
  meta.strategy = ddp::strategy_name(cfg.strategy);
  meta.backend = opts.backend;
  meta.data_source = trainer.data_source().describe();
  meta.config = cfg;
  std::vector<WriteItem> items;
  for (const auto& s : specs) items.push_back({"/model/" + s.rel, host.params + s.offset, s});
  for (const auto& b : buffers) {
    MDDP_CHECK(b.count == trainer.model().flat_count(), "optimizer buffer " << b.name << " has " << b.count << " elements");
    for (const auto& s : specs) items.push_back({"/optimizer/" + b.name + "/" + s.rel, b.data + s.offset, s});
  }

  fault_point("begin", rank);
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
    write_attrs(file, to_attrs(meta));
    {
      Hid lcpl(MDDP_HDF5_CHECK(H5Pcreate(H5P_LINK_CREATE)));
      MDDP_HDF5_CHECK(H5Pset_create_intermediate_group(lcpl, 1));
      Hid g(MDDP_HDF5_CHECK(H5Gcreate2(file, "/optimizer", lcpl, H5P_DEFAULT, H5P_DEFAULT)));
      write_attr(g, "name", cfg.optimizer.name);
      write_attr(g, "step_count", trainer.optimizer().steps_taken());
      write_attr(g, "state_buffers", join(names));
    }
    fault_point("created", rank);
    write_items(file, items, par, par ? rank : 0, par ? size : 1);
    fault_point("before_flush", rank);
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
  fault_point("after_flush", rank);
  res.write_s = sw.elapsed_s();

  // Publish (rank 0 only; everyone learns the outcome).
  sw = core::Stopwatch();
  if (rank == 0 && root_error.empty()) {
    try {
      fsync_path(tmp, false);
      fault_point("after_fsync", rank);
      MDDP_CHECK(std::rename(tmp.c_str(), res.path.c_str()) == 0,
                 "cannot rename " << tmp << " to " << res.path << ": " << std::strerror(errno));
      fault_point("after_rename", rank);
      fsync_path(dir_of(res.path), true);
      fault_point("after_dir_fsync", rank);
      res.publish_s = sw.elapsed_s();
      struct stat st {};
      if (::stat(res.path.c_str(), &st) == 0) res.bytes = static_cast<std::int64_t>(st.st_size);
      // Verify the published file before deleting anything older.
      sw = core::Stopwatch();
      if (opts.verify) (void)read_checkpoint(res.path);
      res.verify_s = sw.elapsed_s();
      // Retention: the new checkpoint is verified, so deleting beyond `keep` never removes the
      // only valid one. Stale temporaries (killed saves) go too.
      if (opts.keep > 0) {
        const auto all = list_checkpoints(opts.dir);
        for (std::size_t i = static_cast<std::size_t>(opts.keep); i < all.size(); ++i) {
          if (all[i] == res.path) continue;
          if (std::remove(all[i].c_str()) == 0) res.deleted.push_back(all[i]);
          if (i == static_cast<std::size_t>(opts.keep)) fault_point("mid_retention", rank);
        }
      }
      for (const auto& n : list_dir(opts.dir)) {
        std::int64_t step = 0;
        if (n.size() > 4 && n.substr(n.size() - 4) == ".tmp" && parse_checkpoint_name(n.substr(0, n.size() - 4), step)) {
          std::remove((opts.dir + "/" + n).c_str());
        }
      }
    } catch (const std::exception& e) {
      root_error = e.what();
    }
  }
  agree_on_root_outcome(comm, rank, root_error.empty() ? root_error : "checkpoint save failed: " + root_error);
  return res;
}

CheckpointContents read_checkpoint(const std::string& path) {
  hdf5_quiet();
  struct stat st {};
  MDDP_USAGE_CHECK(::stat(path.c_str(), &st) == 0, "checkpoint " << path << ": " << std::strerror(errno));
  const htri_t is_h5 = H5Fis_hdf5(path.c_str());
  MDDP_USAGE_CHECK(is_h5 > 0, "checkpoint " << path << ": not an HDF5 file (" << st.st_size
                                            << " bytes; truncated or overwritten?)");
  const std::string file_ctx = "checkpoint " + path;
  Hid file(MDDP_HDF5_FILE_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), file_ctx,
                                "cannot open (truncated or corrupt file?)"));
  const Meta meta = read_meta(file, path);
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
    const std::vector<std::int64_t> want = s.cols > 0 ? std::vector<std::int64_t>{s.rows, s.cols} : std::vector<std::int64_t>{s.rows};
    MDDP_USAGE_CHECK(dims == want, d << " has shape " << dims_string(dims) << ", expected " << dims_string(want));
    const std::uint64_t stored = read_attr_u64(dset, "fnv1a64", d + " attribute 'fnv1a64'");
    MDDP_HDF5_FILE_CHECK(H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst), d,
                         "cannot read data (truncated or corrupt file?)");
    const std::uint64_t computed = fnv(dst, s.count);
    MDDP_USAGE_CHECK(stored == computed, d << " checksum mismatch: stored fnv1a64 " << hex(stored) << ", computed "
                                           << hex(computed) << " (data corrupted)");
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
  MDDP_USAGE_CHECK(bufs == join(names), og << " attribute 'state_buffers' is '" << bufs << "', expected '" << join(names) << "'");
  for (const auto& n : names) {
    std::vector<float> buf(static_cast<std::size_t>(total));
    for (const auto& s : specs) read_tensor("/optimizer/" + n + "/" + s.rel, s, buf.data() + s.offset);
    c.optimizer_state.emplace_back(n, std::move(buf));
  }
  return c;
}

void check_compatible(const CheckpointContents& c, const ddp::TrainConfig& cfg, const std::string& data_source) {
  std::ostringstream bad;
  auto cmp = [&](const char* field, const auto& have, const auto& want) {
    if (!(have == want)) bad << (bad.tellp() > 0 ? "; " : "") << field << " = " << have << " (this run: " << want << ")";
  };
  auto bits = [](float f) { return std::bit_cast<std::uint32_t>(f); };
  cmp("in_dim", c.config.model.in_dim, cfg.model.in_dim);
  cmp("width", c.config.model.width, cfg.model.width);
  cmp("depth", c.config.model.depth, cfg.model.depth);
  cmp("classes", c.config.model.classes, cfg.model.classes);
  cmp("seed", c.config.seed, cfg.seed);
  cmp("global_batch", c.config.global_batch, cfg.global_batch);
  cmp("accum_steps", c.config.accum_steps, cfg.accum_steps);
  cmp("optimizer", c.config.optimizer.name, cfg.optimizer.name);
  if (bits(c.config.optimizer.lr) != bits(cfg.optimizer.lr)) cmp("lr", c.config.optimizer.lr, cfg.optimizer.lr);
  if (bits(c.config.optimizer.weight_decay) != bits(cfg.optimizer.weight_decay))
    cmp("weight_decay", c.config.optimizer.weight_decay, cfg.optimizer.weight_decay);
  if (bits(c.config.optimizer.momentum) != bits(cfg.optimizer.momentum))
    cmp("momentum", c.config.optimizer.momentum, cfg.optimizer.momentum);
  if (bits(c.config.optimizer.beta1) != bits(cfg.optimizer.beta1) || bits(c.config.optimizer.beta2) != bits(cfg.optimizer.beta2) ||
      bits(c.config.optimizer.eps) != bits(cfg.optimizer.eps))
    bad << (bad.tellp() > 0 ? "; " : "") << "adam betas/eps differ";
  cmp("data_source", c.data_source, data_source);
  MDDP_USAGE_CHECK(bad.tellp() == 0, "checkpoint " << c.path << " does not fit this run: " << bad.str());
}

ResumeResult resume(MPI_Comm comm, const std::string& spec, const std::string& dir, ddp::Trainer& trainer) {
  int rank = 0;
  MDDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const bool automatic = spec == "auto";
  ResumeResult res;
  CheckpointContents chosen;
  std::string error;  // strict-mode failure (rank 0)
  if (rank == 0) {
    const std::vector<std::string> candidates = automatic ? list_checkpoints(dir) : std::vector<std::string>{spec};
    if (automatic && candidates.empty()) res.notes.push_back("no checkpoint in " + dir + ": starting from step 0");
    for (const auto& path : candidates) {
      try {
        CheckpointContents c = read_checkpoint(path);
        check_compatible(c, trainer.config(), trainer.data_source().describe());
        chosen = std::move(c);
        res.loaded = true;
        break;
      } catch (const core::UsageError& e) {
        if (!automatic) {
          error = e.what();
          break;
        }
        res.notes.push_back(std::string(e.what()) + " -- skipped, trying an older checkpoint");
      }
    }
    if (automatic && !candidates.empty() && !res.loaded) {
      res.notes.push_back("no valid checkpoint in " + dir + ": starting from step 0");
    }
  }
  // Agree on the outcome: [status, steps_done, optimizer steps, world size at save].
  std::int64_t hdr[4] = {error.empty() ? (res.loaded ? 1 : 0) : 2, chosen.steps_done, chosen.optimizer_steps, chosen.world_size};
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
  int size = 1;
  MDDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (rank == 0 && chosen.world_size != size) {
    res.notes.push_back("checkpoint was written by " + std::to_string(chosen.world_size) + " ranks, resuming on " +
                        std::to_string(size) + " (same global batch, so the same samples)");
  }
  // Staging -> model and optimizer (rank 0 copies, then everyone receives the broadcast).
  auto& model = trainer.model();
  // Into the host view (the live buffers with CpuOps, the host mirror on a GPU), uploaded below.
  const ddp::Trainer::HostState& host = trainer.host_state();
  if (rank == 0) std::memcpy(host.params, chosen.params.data(), chosen.params.size() * sizeof(float));
  bcast_floats(comm, host.params, model.flat_count());
  const auto& buffers = host.optimizer;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (rank == 0) {
      MDDP_CHECK(i < chosen.optimizer_state.size() && chosen.optimizer_state[i].first == buffers[i].name &&
                     static_cast<std::int64_t>(chosen.optimizer_state[i].second.size()) == buffers[i].count,
                 "optimizer state " << buffers[i].name << " missing from the verified checkpoint");
      std::memcpy(buffers[i].data, chosen.optimizer_state[i].second.data(), static_cast<std::size_t>(buffers[i].count) * sizeof(float));
    }
    bcast_floats(comm, buffers[i].data, buffers[i].count);
  }
  trainer.state_from_host();
  trainer.optimizer().set_steps_taken(hdr[2]);
  trainer.restore_progress(hdr[1]);
  return res;
}

}  // namespace microddp::io
