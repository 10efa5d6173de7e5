// run_info.cpp — a fresh run's identity.
#include "io/run_info.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "comm/transport/mpi_check.hpp"
#include "core/hash.hpp"

namespace microddp::io {

std::string new_run_id() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const auto wall = std::chrono::system_clock::now().time_since_epoch().count();
  const auto mono = std::chrono::steady_clock::now().time_since_epoch().count();
  char text[512];
  const int n = std::snprintf(text, sizeof text, "%s:%ld:%lld:%lld", host, static_cast<long>(::getpid()),
                              static_cast<long long>(wall), static_cast<long long>(mono));
  char id[24];
  std::snprintf(id, sizeof id, "%016llx",
                static_cast<unsigned long long>(core::fnv1a64(text, static_cast<std::size_t>(n))));
  return id;
}

namespace {
void broadcast_string(MPI_Comm comm, std::string& s) {
  std::int64_t len = static_cast<std::int64_t>(s.size());
  MDDP_MPI_CHECK(MPI_Bcast(&len, 1, MPI_INT64_T, 0, comm));
  s.resize(static_cast<std::size_t>(len));
  if (len > 0) MDDP_MPI_CHECK(MPI_Bcast(s.data(), comm::to_mpi_int(len), MPI_CHAR, 0, comm));
}
}  // namespace

void broadcast_run_info(MPI_Comm comm, RunInfo& r) {
  broadcast_string(comm, r.run_id);
  broadcast_string(comm, r.plan_history);
  broadcast_string(comm, r.best_metric);
  std::int64_t ints[3] = {r.best_step, r.evals_since_best, r.stopped_early ? 1 : 0};
  MDDP_MPI_CHECK(MPI_Bcast(ints, 3, MPI_INT64_T, 0, comm));
  MDDP_MPI_CHECK(MPI_Bcast(&r.best_value, 1, MPI_DOUBLE, 0, comm));
  r.best_step = ints[0];
  r.evals_since_best = ints[1];
  r.stopped_early = ints[2] != 0;
}

}  // namespace microddp::io
