// test_hdf5_dataset.cpp — the HDF5 data path.
//   RankSlicesMatchGenerator: make the file collectively, then every rank reads its rows of
//     several global batches (including ones that wrap past the end of the file) through
//     Hdf5DataSource: bitwise equal to data::SyntheticDataset, and each rank read exactly its own
//     rows (rows_read == rows requested: no rank reads the whole file).
//   TrainingFromFileEqualsSynthetic: a Trainer on the file equals one on the generator, bitwise.
//   BadFilesAreRejected: NaN feature, label out of range, wrong in_dim: UsageError naming the
//     file, the dataset and the row.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "comm/mpi_backend.hpp"
#include "data/synthetic_dataset.hpp"
#include "ddp/trainer.hpp"
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
  write_synthetic_dataset(MPI_COMM_WORLD, {p, kRows, kDim, kClasses, kSeed});
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
  b.set_data_source(src);
  a.setup();
  b.setup();
  for (int s = 0; s < 10; ++s) EXPECT_EQ(a.step().loss, b.step().loss) << "step " << s;
  EXPECT_EQ(std::memcmp(a.model().param_data(), b.model().param_data(), static_cast<std::size_t>(a.model().flat_count()) * 4), 0);
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
  EXPECT_THROW(t.set_data_source(src), core::UsageError);
  cleanup(p);
}

}  // namespace
}  // namespace microddp::io
