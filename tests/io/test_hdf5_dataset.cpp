// test_hdf5_dataset.cpp — the HDF5 data path.
//   RankSlicesMatchGenerator: make the file collectively, then every rank reads its rows of
//     several global batches (including ones that wrap past the end of the file) through
//     Hdf5DataSource: bitwise equal to data::SyntheticDataset, and each rank read exactly its own
//     rows (rows_read == rows requested: no rank reads the whole file).
//   TrainingFromFileEqualsSynthetic: a Trainer on the file equals one on the generator, bitwise.
//   FillRowsResidentAndCoalesced: fill_rows() of a scattered list (repeats, runs, out of order)
//     equals the generator's rows, both with the file resident in memory and with the resident
//     limit at 0 (sorted, coalesced hyperslab reads: fewer rows read than a whole-file load).
//   FileChangedUnderTheSourceStopsIt: truncated (streamed: the next read), rewritten at the same
//     size (modification time), replaced and removed (resident: the epoch's check): a UsageError
//     naming the file and what changed, never rows of zeros.
//   EpochsSameBatchAtEveryWorldSize: DirectInput reading a validation split's training side in
//     shuffled epochs, with accumulation: the ranks' rows of each micro-batch, concatenated, are
//     the one-rank batch bit for bit at np 1, 2, 3 (simulated ranks), and are the epoch's rows.
//   BadFilesAreRejected: NaN feature, label out of range, wrong in_dim: UsageError naming the
//     file, the dataset and the row.
//   H5pyDefaultsAreAccepted / VariableLengthStringAttributes / H5pyFilesKeepTheirErrors: files as
//     h5py writes them, made here with the HDF5 C API so these tests need no Python (the h5py
//     end-to-end test is io.h5py_data): float64 inputs (read as float32, rounded to nearest),
//     int64 labels, no attributes (classes = max label + 1), or variable-length UTF-8 string
//     attributes; and the errors such files can hold, each naming the file and the dataset.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "comm/backends/mpi_backend.hpp"
#include "core/error.hpp"
#include "data/epoch_sampler.hpp"
#include "data/split_source.hpp"
#include "data/synthetic_dataset.hpp"
#include "data/train_val_split.hpp"
#include "ddp/direct_input.hpp"
#include "ddp/trainer.hpp"
#include "io/hdf5_data_source.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_dataset.hpp"
#include "kernels/ops.hpp"

namespace microddp::io {
namespace {

std::string shared_path(const char* name) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char buf[256] = {};
  if (rank == 0) {
    std::snprintf(buf, sizeof buf, "%s/mddp_ds_%d_%s.h5", std::filesystem::temp_directory_path().c_str(),
                  static_cast<int>(getpid()), name);
  }
  MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, MPI_COMM_WORLD);
  return buf;
}

constexpr std::int64_t kRows = 101, kDim = 6, kClasses = 4;
constexpr std::uint64_t kSeed = 9;

std::string make(const char* name) {
  const std::string p = shared_path(name);
  write_synthetic_dataset(MPI_COMM_WORLD, {p, kRows, kDim, kClasses, kSeed, {}});
  return p;
}

void cleanup(const std::string& p) {
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::remove(p.c_str());
}

TEST(Hdf5Dataset, RankSlicesMatchGenerator) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string p = make("slices");
  Hdf5DataSource src(p);
  EXPECT_EQ(src.rows(), kRows);
  EXPECT_EQ(src.in_dim(), kDim);
  EXPECT_EQ(src.classes(), kClasses);
  const data::SyntheticDataset gen(kSeed, kDim, kClasses);
  const std::int64_t batch = 17;  // 101 rows = 5 full batches + 16: batch 5 wraps past the end
  const data::Sampler sampler(batch, rank, size);
  std::vector<float> x(static_cast<std::size_t>(sampler.local_count() * kDim)), xr(x.size());
  std::vector<std::int32_t> y(static_cast<std::size_t>(sampler.local_count())), yr(y.size());
  std::int64_t requested = 0;
  for (std::int64_t step = 0; step < 8; ++step) {
    const std::int64_t first = sampler.first_sample(step);
    src.fill(first, sampler.local_count(), x.data(), y.data());
    requested += sampler.local_count();
    // Reference: the generator at the wrapped row indices.
    for (std::int64_t i = 0; i < sampler.local_count(); ++i) {
      gen.fill((first + i) % kRows, 1, xr.data() + i * kDim, yr.data() + i);
    }
    EXPECT_EQ(std::memcmp(x.data(), xr.data(), x.size() * sizeof(float)), 0) << "step " << step << " rank " << rank;
    EXPECT_EQ(y, yr) << "step " << step;
  }
  EXPECT_EQ(src.rows_read(), requested) << "a rank read rows it does not own";
  EXPECT_LT(src.rows_read(), 8 * batch) << "a rank read more than its share";
  cleanup(p);
}

TEST(Hdf5Dataset, TrainingFromFileEqualsSynthetic) {
  const std::string p = make("train");
  ddp::TrainConfig cfg;
  cfg.model = model::MlpConfig{kDim, 8, 2, kClasses};
  cfg.global_batch = 10;
  cfg.steps = 10;  // 100 samples < 101 rows: no wrap, so the file holds exactly the generator's samples
  cfg.seed = kSeed;
  comm::Communicator comm(std::make_unique<comm::MpiBackend>(MPI_COMM_WORLD));
  comm.attach_sync_comm(MPI_COMM_WORLD);  // as make_communicator does
  auto ops = kernels::make_cpu_ops(1);
  ddp::Trainer a(cfg, comm, *ops), b(cfg, comm, *ops);
  Hdf5DataSource src(p);
  const ddp::DataSourceLease lease = b.set_data_source(src);  // after src: ends before it
  a.setup();
  b.setup();
  for (int s = 0; s < 10; ++s) EXPECT_EQ(a.step().loss, b.step().loss) << "step " << s;
  EXPECT_EQ(
      std::memcmp(a.model().param_data(), b.model().param_data(), static_cast<std::size_t>(a.model().flat_count()) * 4),
      0);
  cleanup(p);
}

TEST(Hdf5Dataset, FillRowsResidentAndCoalesced) {
  const std::string p = make("rows");
  const data::SyntheticDataset gen(kSeed, kDim, kClasses);
  const std::vector<std::int64_t> rows = {7, 3, 4, 5, 100, 0, 5, 6, 99, 50, 3};
  const auto n = static_cast<std::int64_t>(rows.size());
  std::vector<float> ref(static_cast<std::size_t>(n * kDim));
  std::vector<std::int32_t> yref(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) gen.fill(rows[i], 1, ref.data() + i * kDim, yref.data() + i);
  for (const bool resident : {true, false}) {
    Hdf5DataSource src(p);
    if (!resident) src.set_resident_limit_bytes(0);
    std::vector<float> x(ref.size(), -1.0f);  // poisoned: an unwritten row shows
    std::vector<std::int32_t> y(yref.size(), -1);
    src.fill_rows(rows.data(), n, x.data(), y.data());
    EXPECT_EQ(src.resident(), resident);
    EXPECT_EQ(std::memcmp(x.data(), ref.data(), x.size() * sizeof(float)), 0) << "resident " << resident;
    EXPECT_EQ(y, yref) << "resident " << resident;
    // Coalesced: runs 0, 3..7, 50, 99..100 = 1 + 5 + 1 + 2 rows, not one read per requested row.
    // (braces: EXPECT_* is an if/else of its own, -Wdangling-else)
    if (!resident) {
      EXPECT_EQ(src.rows_read(), 9);
    } else {
      EXPECT_EQ(src.rows_read(), kRows);
    }
  }
  cleanup(p);
}

// A file that changes on disk under an open source is never read as zeros: truncated (HDF5 reads
// past the end as zeros, without an error), rewritten in place at the same size, or replaced, the
// next read (streamed) or check (resident, as the trainer makes at each epoch's end) is a
// UsageError naming the file and what changed. Each rank works on a file of its own.
std::string own_copy(const std::string& shared, const char* name) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string p = shared + "." + name + ".rank" + std::to_string(rank);
  std::filesystem::copy_file(shared, p, std::filesystem::copy_options::overwrite_existing);
  return p;
}

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const core::UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Hdf5Dataset, FileChangedUnderTheSourceStopsIt) {
  const std::string shared = make("changed");
  const std::vector<std::int64_t> rows = {90, 3, 50};
  std::vector<float> x(static_cast<std::size_t>(kRows * kDim));
  std::vector<std::int32_t> y(static_cast<std::size_t>(kRows));
  {  // streamed, truncated: the read that follows fails, naming the sizes
    const std::string p = own_copy(shared, "truncated");
    Hdf5DataSource src(p);
    src.set_resident_limit_bytes(0);
    src.fill(0, 10, x.data(), y.data());
    EXPECT_NO_THROW(src.check_unchanged());
    const auto bytes = std::filesystem::file_size(p);
    std::filesystem::resize_file(p, bytes / 2);
    const std::string e = usage_error_of([&] { src.fill(kRows - 10, 10, x.data(), y.data()); });
    EXPECT_NE(e.find("dataset " + p + " changed on disk during the run: its size went from " + std::to_string(bytes) +
                     " to " + std::to_string(bytes / 2) + " bytes (truncated)"),
              std::string::npos)
        << e;
    const std::string e2 = usage_error_of([&] { src.fill_rows(rows.data(), 3, x.data(), y.data()); });
    EXPECT_NE(e2.find("changed on disk"), std::string::npos) << e2;
    std::remove(p.c_str());
  }
  {  // streamed, the same size rewritten: the modification time tells
    const std::string p = own_copy(shared, "rewritten");
    Hdf5DataSource src(p);
    src.set_resident_limit_bytes(0);
    src.fill_rows(rows.data(), 3, x.data(), y.data());
    std::filesystem::last_write_time(p, std::filesystem::last_write_time(p) + std::chrono::seconds(1));
    const std::string e = usage_error_of([&] { src.fill(0, 5, x.data(), y.data()); });
    EXPECT_NE(e.find("it was modified (same size"), std::string::npos) << e;
    std::remove(p.c_str());
  }
  {  // resident: rows come from memory, but the epoch's check stops the run; replaced, then removed
    const std::string p = own_copy(shared, "replaced");
    Hdf5DataSource src(p);
    src.fill_rows(rows.data(), 3, x.data(), y.data());
    ASSERT_TRUE(src.resident());
    const std::string other = own_copy(shared, "other");
    std::filesystem::rename(other, p);
    const std::string e = usage_error_of([&] { src.check_unchanged(); });
    EXPECT_NE(e.find("another file now stands at its path"), std::string::npos) << e;
    std::remove(p.c_str());
    const std::string e2 = usage_error_of([&] { src.check_unchanged(); });
    EXPECT_NE(e2.find("it can no longer be found"), std::string::npos) << e2;
  }
  cleanup(shared);
}

TEST(Hdf5Dataset, EpochsSameBatchAtEveryWorldSize) {
  const std::string p = make("epochs");
  Hdf5DataSource file(p);
  const data::TrainValSplit split(kRows, 0.2, kSeed);  // 20 validation rows, 81 training rows
  const data::SplitSource train(file, split, data::SplitSource::Side::Train, kSeed);
  ASSERT_EQ(train.rows(), 81);
  const model::MlpConfig model{kDim, 8, 2, kClasses};
  const std::int64_t micro = 7, accum = 2;                         // steps of 14 rows: 5 per epoch, 11 dropped
  const data::EpochSampler epochs(train.rows(), micro * accum, kSeed, true);
  auto ops = kernels::make_cpu_ops(1);
  const data::SyntheticDataset gen(kSeed, kDim, kClasses);
  for (std::int64_t b = 0; b < 14; ++b) {  // micro-batches of steps 0..6: epochs 0 and 1
    std::vector<float> ref;
    std::vector<std::int32_t> yref;
    for (std::int64_t i = 0; i < micro; ++i) {  // the file's rows of positions [k B, (k + 1) B) of the step
      const std::int64_t t = epochs.row(b / accum, (b % accum) * micro + i);
      std::vector<float> x(kDim);
      std::int32_t y = 0;
      gen.fill(split.train_row(t), 1, x.data(), &y);
      EXPECT_FALSE(split.is_val(split.train_row(t)));
      ref.insert(ref.end(), x.begin(), x.end());
      yref.push_back(y);
    }
    for (int world = 1; world <= 3; ++world) {
      std::vector<float> got;
      std::vector<std::int32_t> ygot;
      for (int rank = 0; rank < world; ++rank) {
        std::vector<float> input(static_cast<std::size_t>(data::Sampler::max_local_count(micro, world) * kDim));
        ddp::DirectInput in(*ops, model, kSeed, micro, rank, world, input.data());
        in.set_source(train);
        in.set_epochs(epochs, accum);
        in.load(b, false);
        got.insert(got.end(), input.begin(), input.begin() + in.rows() * kDim);
        ygot.insert(ygot.end(), in.labels(), in.labels() + in.rows());
      }
      ASSERT_EQ(got.size(), ref.size());
      EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)), 0) << "batch " << b << " np " << world;
      EXPECT_EQ(ygot, yref) << "batch " << b << " np " << world;
    }
  }
  cleanup(p);
}

// Rewrites one element of a dataset (rank 0, serial) to plant a bad value.
template <typename T>
void poke(const std::string& p, const char* dset, hsize_t row, hsize_t col, T value, hid_t mem_type) {
  const hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
  const hid_t fs = H5Dget_space(d);
  const hsize_t start[2] = {row, col}, one[2] = {1, 1};
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, one, nullptr);
  const hsize_t n = 1;
  const hid_t ms = H5Screate_simple(1, &n, nullptr);
  H5Dwrite(d, mem_type, ms, fs, H5P_DEFAULT, &value);
  H5Sclose(ms);
  H5Sclose(fs);
  H5Dclose(d);
  H5Fclose(f);
}

TEST(Hdf5Dataset, BadFilesAreRejected) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string p = make("bad");
  if (rank == 0) {
    poke<float>(p, "/inputs", 7, 2, std::nanf(""), H5T_NATIVE_FLOAT);
    poke<std::int32_t>(p, "/labels", 9, 0, 11, H5T_NATIVE_INT32);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Hdf5DataSource src(p);
  std::vector<float> x(20 * kDim);
  std::vector<std::int32_t> y(20);
  auto expect_error = [&](std::int64_t first, const char* needle) {
    try {
      src.fill(first, 3, x.data(), y.data());
      ADD_FAILURE() << "rows " << first << "..: no error";
    } catch (const core::UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(p), std::string::npos) << m;
      EXPECT_NE(m.find(needle), std::string::npos) << m;
    }
  };
  expect_error(6, "/inputs row 7 column 2 is nan");
  expect_error(8, "/labels row 9 is 11, outside [0, 4)");
  src.fill(20, 3, x.data(), y.data());  // good rows still read fine

  // A model with another in_dim refuses the file before training.
  ddp::TrainConfig cfg;
  cfg.model = model::MlpConfig{kDim + 1, 8, 2, kClasses};
  cfg.global_batch = 4;
  comm::Communicator comm(std::make_unique<comm::MpiBackend>(MPI_COMM_WORLD));
  comm.attach_sync_comm(MPI_COMM_WORLD);  // as make_communicator does
  auto ops = kernels::make_cpu_ops(1);
  ddp::Trainer t(cfg, comm, *ops);
  EXPECT_THROW((void)t.set_data_source(src), core::UsageError);
  cleanup(p);
}

// ---- files as h5py writes them ------------------------------------------------------------------

// Writes /inputs (rows, cols) stored as `x_type` and /labels (label_rows,) stored as `y_type`, from
// doubles and int64s (HDF5 converts), contiguous and without attributes: h5py's f["inputs"] = x.
hid_t write_plain(const std::string& p, const std::vector<double>& x, hsize_t rows, hsize_t cols, hid_t x_type,
                  const std::vector<std::int64_t>& y, hsize_t label_rows, hid_t y_type) {
  const hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t xd[2] = {rows, cols};
  const hid_t xs = H5Screate_simple(2, xd, nullptr);
  const hid_t xds = H5Dcreate2(f, "/inputs", x_type, xs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(xds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x.data());
  const hid_t ys = H5Screate_simple(1, &label_rows, nullptr);
  const hid_t yds = H5Dcreate2(f, "/labels", y_type, ys, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(yds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, y.data());
  H5Dclose(yds);
  H5Sclose(ys);
  H5Dclose(xds);
  H5Sclose(xs);
  return f;  // open: callers may add attributes, then H5Fclose
}

// A scalar variable-length UTF-8 string attribute: what h5py writes for f.attrs["name"] = "text".
void vlen_attr(hid_t obj, const char* name, const char* value) {
  const hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, t, &value);
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(t);
}

void int64_attr(hid_t obj, const char* name, std::int64_t v) {
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(obj, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_INT64, &v);
  H5Aclose(a);
  H5Sclose(space);
}

constexpr hsize_t kPlainRows = 37, kPlainCols = 5;

// Inputs that float32 cannot hold exactly (so the conversion is visible), labels 0..3.
std::vector<double> plain_inputs() {
  std::vector<double> x(kPlainRows * kPlainCols);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = 0.1 * static_cast<double>(i) - 3.3 + 1e-12 * static_cast<double>(i % 7);
  return x;
}
std::vector<std::int64_t> plain_labels() {
  std::vector<std::int64_t> y(kPlainRows);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int64_t>((i * 7) % 4);
  return y;
}

// Rank 0 writes the file with `write` (which gets the path), the others wait.
template <typename Write>
std::string make_plain(const char* name, Write write) {
  const std::string p = shared_path(name);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) write(p);
  MPI_Barrier(MPI_COMM_WORLD);
  return p;
}

TEST(Hdf5Dataset, H5pyDefaultsAreAccepted) {
  const auto x = plain_inputs();
  const auto y = plain_labels();
  const std::string p = make_plain("h5py_defaults", [&](const std::string& path) {
    H5Fclose(write_plain(path, x, kPlainRows, kPlainCols, H5T_IEEE_F64LE, y, kPlainRows, H5T_STD_I64LE));
  });
  Hdf5DataSource src(p);
  EXPECT_EQ(src.rows(), static_cast<std::int64_t>(kPlainRows));
  EXPECT_EQ(src.in_dim(), static_cast<std::int64_t>(kPlainCols));
  EXPECT_EQ(src.classes(), 4) << "max label + 1";
  EXPECT_EQ(src.classes_from(), Hdf5DataSource::ClassesFrom::MaxLabel);
  EXPECT_FALSE(src.microddp_format());
  EXPECT_EQ(src.inputs_dtype(), "float64");
  EXPECT_EQ(src.labels_dtype(), "int64");
  EXPECT_NE(src.summary().find("converted to float32"), std::string::npos) << src.summary();
  EXPECT_NE(src.summary().find("max label + 1"), std::string::npos) << src.summary();
  // Every row, wrapping past the end once: float32 rounded to nearest, labels as written.
  std::vector<float> got(kPlainRows * kPlainCols + 3 * kPlainCols);
  std::vector<std::int32_t> labels(kPlainRows + 3);
  src.fill(0, static_cast<std::int64_t>(kPlainRows + 3), got.data(), labels.data());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float want = static_cast<float>(x[i % x.size()]);
    ASSERT_EQ(std::memcmp(&got[i], &want, sizeof want), 0) << "element " << i << ": " << got[i] << " vs " << want;
  }
  for (std::size_t r = 0; r < labels.size(); ++r) EXPECT_EQ(labels[r], y[r % y.size()]) << "row " << r;
  // The caller's class count wins over inference when the file has no attribute.
  EXPECT_EQ(Hdf5DataSource(p, 9).classes(), 9);
  // inspect's scan says where the classes came from and counts every label.
  const DatasetReport r = scan_dataset(p);
  EXPECT_TRUE(r.classes_inferred);
  EXPECT_FALSE(r.has_seed);
  ASSERT_EQ(r.label_counts.size(), 4u);
  std::int64_t total = 0;
  for (auto c : r.label_counts) total += c;
  EXPECT_EQ(total, static_cast<std::int64_t>(kPlainRows));
  cleanup(p);
}

TEST(Hdf5Dataset, VariableLengthStringAttributes) {
  const auto x = plain_inputs();
  const auto y = plain_labels();
  const std::string p = make_plain("vlen_attrs", [&](const std::string& path) {
    const hid_t f = write_plain(path, x, kPlainRows, kPlainCols, H5T_IEEE_F32LE, y, kPlainRows, H5T_STD_I32LE);
    vlen_attr(f, "format", kDatasetFormat);
    int64_attr(f, "format_version", kDatasetFormatVersion);
    int64_attr(f, "classes", 6);
    vlen_attr(f, "generator", "numpy.random.default_rng(0), \u00fcnicode welcome");
    H5Fclose(f);
  });
  Hdf5DataSource src(p, 3);
  EXPECT_TRUE(src.microddp_format());
  EXPECT_EQ(src.classes(), 6) << "the attribute wins over the caller's value";
  EXPECT_EQ(src.classes_from(), Hdf5DataSource::ClassesFrom::Attribute);
  const hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_EQ(read_attr_str(f, "generator", "generator"), "numpy.random.default_rng(0), \u00fcnicode welcome");
  H5Fclose(f);
  cleanup(p);
}

TEST(Hdf5Dataset, H5pyFilesKeepTheirErrors) {
  auto x = plain_inputs();
  auto y = plain_labels();
  auto expect_error = [](const std::string& p, const std::string& needle, auto&& action) {
    try {
      action();
      ADD_FAILURE() << "no error, expected '" << needle << "'";
    } catch (const core::UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(p), std::string::npos) << m;
      EXPECT_NE(m.find(needle), std::string::npos) << m;
    }
  };
  std::vector<float> xb(4 * kPlainCols);
  std::vector<std::int32_t> yb(4);
  {  // --classes 3 given and a label 3 in row 1 ((1 * 7) % 4 = 3).
    const std::string p = make_plain("given_classes", [&](const std::string& path) {
      H5Fclose(write_plain(path, x, kPlainRows, kPlainCols, H5T_IEEE_F64LE, y, kPlainRows, H5T_STD_I64LE));
    });
    Hdf5DataSource src(p, 3);
    expect_error(p, "/labels row 1 is 3, outside [0, 3)", [&] { src.fill(0, 3, xb.data(), yb.data()); });
    cleanup(p);
  }
  {  // A negative label while inferring the classes.
    auto bad = y;
    bad[2] = -1;
    const std::string p = make_plain("negative", [&](const std::string& path) {
      H5Fclose(write_plain(path, x, kPlainRows, kPlainCols, H5T_IEEE_F64LE, bad, kPlainRows, H5T_STD_I64LE));
    });
    expect_error(p, "/labels row 2 is -1, labels must be >= 0", [&] { Hdf5DataSource src(p); });
    cleanup(p);
  }
  {  // One class only: max label + 1 = 1 is not a classifier.
    const std::vector<std::int64_t> zeros(kPlainRows, 0);
    const std::string p = make_plain("one_class", [&](const std::string& path) {
      H5Fclose(write_plain(path, x, kPlainRows, kPlainCols, H5T_IEEE_F64LE, zeros, kPlainRows, H5T_STD_I64LE));
    });
    expect_error(p, "max label + 1 = 1 classes", [&] { Hdf5DataSource src(p); });
    cleanup(p);
  }
  {  // NaN, and a finite float64 beyond float32's range.
    auto bad = x;
    bad[2 * kPlainCols + 1] = std::nan("");
    bad[5 * kPlainCols + 4] = 1e300;
    const std::string p = make_plain("nan64", [&](const std::string& path) {
      H5Fclose(write_plain(path, bad, kPlainRows, kPlainCols, H5T_IEEE_F64LE, y, kPlainRows, H5T_STD_I64LE));
    });
    Hdf5DataSource src(p);
    expect_error(p, "/inputs row 2 column 1 is nan", [&] { src.fill(1, 3, xb.data(), yb.data()); });
    expect_error(p, "/inputs row 5 column 4 is 1e+300, outside the float32 range",
                 [&] { src.fill(4, 3, xb.data(), yb.data()); });
    cleanup(p);
  }
  {  // Row counts that disagree.
    const std::string p = make_plain("rows", [&](const std::string& path) {
      H5Fclose(write_plain(path, x, kPlainRows, kPlainCols, H5T_IEEE_F64LE, y, kPlainRows - 1, H5T_STD_I64LE));
    });
    expect_error(p, "dataset /labels has shape (36,), expected (37,) to match /inputs", [&] { Hdf5DataSource src(p); });
    cleanup(p);
  }
  {  // Labels that are not integers, or integers int64 cannot hold exactly.
    for (const hid_t type : {H5T_IEEE_F64LE, H5T_STD_U64LE}) {
      const std::string p = make_plain("label_type", [&](const std::string& path) {
        H5Fclose(write_plain(path, x, kPlainRows, kPlainCols, H5T_IEEE_F64LE, y, kPlainRows, type));
      });
      expect_error(p, "dataset /labels has dtype", [&] { Hdf5DataSource src(p); });
      cleanup(p);
    }
  }
  {  // A format that is not ours (a checkpoint passed as data), as a variable-length string.
    const std::string p = make_plain("other_format", [&](const std::string& path) {
      const hid_t f = write_plain(path, x, kPlainRows, kPlainCols, H5T_IEEE_F64LE, y, kPlainRows, H5T_STD_I64LE);
      vlen_attr(f, "format", "microddp-checkpoint");
      H5Fclose(f);
    });
    expect_error(p, "attribute 'format' is 'microddp-checkpoint', expected 'microddp-dataset'",
                 [&] { Hdf5DataSource src(p); });
    cleanup(p);
  }
}

}  // namespace
}  // namespace microddp::io
