// agreed_usage_error.cpp — two small all-reduces: did any rank fail, did every rank fail.
#include "run/agreed_usage_error.hpp"

#include <cstdint>

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"

namespace microddp::run {

void agree_on_usage_error(const comm::MpiRuntime& mpi, const char* section, const std::string& error,
                          const std::string& elsewhere) {
  int failed = error.empty() ? 0 : 1, any_failed = 0, all_failed = 0;
  {
    const auto watched = mpi.watch(section);
    MDDP_MPI_CHECK(MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, mpi.world()));
    MDDP_MPI_CHECK(MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_MIN, mpi.world()));
  }
  if (!any_failed) return;
  if (failed) core::throw_usage_error(error, all_failed == 1);
  core::throw_usage_error(elsewhere, false);
}

void run_on_rank0(const comm::MpiRuntime& mpi, const char* section, const std::function<void()>& work) {
  std::string error;
  if (mpi.rank() == 0) {
    try {
      work();
    } catch (const core::UsageError& e) {
      error = e.what();
    }
  }
  const auto watched = mpi.watch(section);
  std::int64_t length = static_cast<std::int64_t>(error.size());
  MDDP_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT64_T, 0, mpi.world()));
  if (length == 0) return;
  error.resize(static_cast<std::size_t>(length));
  MDDP_MPI_CHECK(MPI_Bcast(error.data(), comm::to_mpi_int(length), MPI_CHAR, 0, mpi.world()));
  core::throw_usage_error(error, /*agreed=*/true);
}

}  // namespace microddp::run
