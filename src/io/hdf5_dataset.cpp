// hdf5_dataset.cpp — the synthetic-set writer (collective MPI-IO), published atomically.
#include "io/hdf5_dataset.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "data/synthetic_dataset.hpp"
#include "io/atomic_file.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"

namespace microddp::io {

namespace {
// Rows per write block: at most 64 Ki rows and at most 64 MiB of inputs (at least one row), so the
// block's memory is bounded whatever --in-dim is (a row of the widest, 2^24 features, is 64 MiB).
constexpr std::int64_t kBlockRows = 65536;
constexpr std::int64_t kBlockBytes = std::int64_t{64} << 20;
std::int64_t block_rows(std::int64_t in_dim) {
  return std::clamp<std::int64_t>(kBlockBytes / (in_dim * static_cast<std::int64_t>(sizeof(float))), 1, kBlockRows);
}
}  // namespace

double write_synthetic_dataset(MPI_Comm comm, const MakeDatasetOptions& o) {
  hdf5_quiet();
  core::Stopwatch sw;
  int rank = 0, size = 1;
  MDDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MDDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  const std::uint64_t teacher = o.teacher_seed.value_or(o.seed);
  const data::SyntheticDataset gen(o.seed, o.in_dim, o.classes, teacher);
  const std::string tmp = temp_path(o.path);
  const std::int64_t block = block_rows(o.in_dim);
  // Any failure on any rank: the temporary goes (every rank that sees it fails tries; removing twice
  // is harmless), so a failed make-dataset leaves neither OUT nor OUT.tmp.
  try {
    Hid fapl(MDDP_HDF5_CHECK(H5Pcreate(H5P_FILE_ACCESS)));
    MDDP_HDF5_CHECK(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL));
    Hid file(MDDP_HDF5_FILE_CHECK(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), tmp, "cannot create file"));
    write_attr(file, "format", std::string(kDatasetFormat));
    write_attr(file, "format_version", kDatasetFormatVersion);
    write_attr(file, "samples", o.samples);
    write_attr(file, "in_dim", o.in_dim);
    write_attr(file, "classes", o.classes);
    write_attr_u64(file, "seed", o.seed);
    write_attr_u64(file, "teacher_seed", teacher);
    write_attr(file, "generator",
               std::string("microddp synthetic teacher set (data/synthetic_dataset.hpp), samples 0..N-1"));
    const hsize_t xd[2] = {static_cast<hsize_t>(o.samples), static_cast<hsize_t>(o.in_dim)};
    const hsize_t yd[1] = {static_cast<hsize_t>(o.samples)};
    Hid xs(MDDP_HDF5_CHECK(H5Screate_simple(2, xd, nullptr)));
    Hid ys(MDDP_HDF5_CHECK(H5Screate_simple(1, yd, nullptr)));
    Hid xds(MDDP_HDF5_CHECK(H5Dcreate2(file, "/inputs", H5T_IEEE_F32LE, xs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    Hid yds(MDDP_HDF5_CHECK(H5Dcreate2(file, "/labels", H5T_STD_I32LE, ys, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    Hid dxpl(MDDP_HDF5_CHECK(H5Pcreate(H5P_DATASET_XFER)));
    MDDP_HDF5_CHECK(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
    const std::int64_t lo = o.samples * rank / size, hi = o.samples * (rank + 1) / size;
    // Collective writes need the same number of calls on every rank: the largest share decides.
    const std::int64_t max_share = (o.samples + size - 1) / size + 1;
    const std::int64_t blocks = (max_share + block - 1) / block;
    std::vector<float> x(static_cast<std::size_t>(std::min(block, std::max<std::int64_t>(hi - lo, 1)) * o.in_dim));
    std::vector<std::int32_t> y(x.size() / static_cast<std::size_t>(o.in_dim));
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t r0 = std::min(hi, lo + b * block), r1 = std::min(hi, r0 + block);
      const std::int64_t n = r1 - r0;
      if (n > 0) gen.fill(r0, n, x.data(), y.data());
      Hid fsx(MDDP_HDF5_CHECK(H5Dget_space(xds)));
      Hid fsy(MDDP_HDF5_CHECK(H5Dget_space(yds)));
      const hsize_t mx[1] = {static_cast<hsize_t>(std::max<std::int64_t>(n, 0) * o.in_dim)};
      const hsize_t my[1] = {static_cast<hsize_t>(std::max<std::int64_t>(n, 0))};
      Hid msx(MDDP_HDF5_CHECK(H5Screate_simple(1, mx, nullptr)));
      Hid msy(MDDP_HDF5_CHECK(H5Screate_simple(1, my, nullptr)));
      if (n > 0) {
        const hsize_t start[2] = {static_cast<hsize_t>(r0), 0},
                      cnt[2] = {static_cast<hsize_t>(n), static_cast<hsize_t>(o.in_dim)};
        MDDP_HDF5_CHECK(H5Sselect_hyperslab(fsx, H5S_SELECT_SET, start, nullptr, cnt, nullptr));
        MDDP_HDF5_CHECK(H5Sselect_hyperslab(fsy, H5S_SELECT_SET, start, nullptr, cnt, nullptr));
      } else {
        MDDP_HDF5_CHECK(H5Sselect_none(fsx));
        MDDP_HDF5_CHECK(H5Sselect_none(fsy));
        MDDP_HDF5_CHECK(H5Sselect_none(msx));
        MDDP_HDF5_CHECK(H5Sselect_none(msy));
      }
      MDDP_HDF5_CHECK(H5Dwrite(xds, H5T_NATIVE_FLOAT, msx, fsx, dxpl, x.data()));
      MDDP_HDF5_CHECK(H5Dwrite(yds, H5T_NATIVE_INT32, msy, fsy, dxpl, y.data()));
    }
    MDDP_HDF5_CHECK(H5Fflush(file, H5F_SCOPE_GLOBAL));
  } catch (...) {  // the handles above closed first (collective close)
    std::remove(tmp.c_str());
    throw;
  }
  int ok = 1;
  if (rank == 0) {
    try {
      publish(tmp, o.path);
    } catch (const std::exception& e) {
      std::remove(tmp.c_str());
      std::fprintf(stderr, "microddp: error: %s\n", e.what());
      ok = 0;
    }
  }
  MDDP_MPI_CHECK(MPI_Bcast(&ok, 1, MPI_INT, 0, comm));
  MDDP_CHECK(ok == 1, "publishing dataset " << o.path << " failed (see rank 0's message)");
  return sw.elapsed_s();
}

}  // namespace microddp::io
