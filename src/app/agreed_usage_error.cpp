// agreed_usage_error.cpp — two small all-reduces: did any rank fail, did every rank fail.
#include "app/agreed_usage_error.hpp"

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"

namespace microddp::app {

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

}  // namespace microddp::app
