// mpi_runtime.hpp — MPI start-up and shut-down for the whole process (RAII), and abort.
// Contract: exactly one MpiRuntime lives in main. It initialises MPI with MPI_THREAD_SERIALIZED
// (one communication thread per communicator owns the MPI traffic, see progress_engine.hpp), sets
// MPI_ERRORS_RETURN on MPI_COMM_WORLD, computes the node-local rank, and tells logging and error
// messages the rank. Destruction finalises MPI.
#pragma once

#include <mpi.h>

#include <string>

namespace microddp::comm {

class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // rank among the processes on this node
  int local_size() const { return local_size_; }
  MPI_Comm world() const { return MPI_COMM_WORLD; }
  std::string hostname() const { return hostname_; }
  std::string library_version() const;  // e.g. "Open MPI v4.1.4"

  // Ends every rank of the job (MPI_Abort) with this exit code. Never returns.
  [[noreturn]] static void abort_all(int code);
  static bool initialized();

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string hostname_;
};

}  // namespace microddp::comm
