// mpi_runtime.hpp — MPI start-up and shut-down for the whole process (RAII), and abort.
// Contract: exactly one MpiRuntime lives in main. It initialises MPI with MPI_THREAD_SERIALIZED
// (one communication thread per communicator owns the MPI traffic, see progress_engine.hpp), sets
// MPI_ERRORS_RETURN on MPI_COMM_WORLD, computes the node-local rank, and tells logging and error
// messages the rank. Destruction finalises MPI.
//
// Sections: MPI calls made outside a Communicator (start-up itself, the agreements on --data and
// --device, checkpoint broadcasts and MPI-IO writes) have no collective watchdog of their own, so
// a rank that is stopped or dead while the others are inside one would hang the job. Such code
// runs inside `auto s = mpi.watch("label")`: a section that takes longer than the runtime's
// timeout (--comm-timeout) ends the job with one message naming the section on every waiting rank
// (MPI_Abort; before MPI is up, _Exit). Start-up (MPI_Init_thread + the node split) is a section.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>

namespace microddp::comm {

class CollectiveWatchdog;

// The default of --comm-timeout (seconds), also the runtime's section timeout when a command has
// no such option.
inline constexpr double kDefaultCommTimeoutS = 300.0;

class MpiRuntime {
 public:
  // timeout_s: the section watchdog's limit (0: no watchdog).
  MpiRuntime(int* argc, char*** argv, double timeout_s = kDefaultCommTimeoutS);
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
  // The rank as the launcher exported it (Open MPI, PMI, PMIx, SLURM), usable before MPI is up.
  static std::optional<std::string> launcher_rank();

  // RAII: brackets a blocking MPI section on the calling (main) thread. Sections nest; only the
  // outermost is timed (its label names the hang).
  class Section {
   public:
    Section(const MpiRuntime& mpi, const char* label);
    ~Section();
    Section(const Section&) = delete;
    Section& operator=(const Section&) = delete;

   private:
    const MpiRuntime& mpi_;
  };
  [[nodiscard]] Section watch(const char* label) const { return Section(*this, label); }

 private:
  int rank_ = -1, size_ = 1, local_rank_ = 0, local_size_ = 1;  // rank -1: not known yet (start-up)
  std::string hostname_;
  std::atomic<int> reported_rank_{-1};  // rank_ for the watchdog thread, once known
  std::unique_ptr<CollectiveWatchdog> watchdog_;
  mutable int section_depth_ = 0;
};

}  // namespace microddp::comm
