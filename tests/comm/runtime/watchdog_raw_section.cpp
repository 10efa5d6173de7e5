// watchdog_raw_section.cpp — fault program for the watchdog test's raw-MPI cases: MPI calls made
// outside a Communicator (MpiRuntime sections) must not hang either.
// Usage: watchdog_raw_section startup|section TIMEOUT_S
//   startup  the last rank sleeps 120 s before it starts MPI; the others wait inside MPI start-up
//            (MPI_Init_thread's exchange, the node-local split)
//   section  every rank starts; the last rank sleeps 120 s instead of entering a watched
//            MPI_Barrier that the others are blocked in (like a stopped rank during the --data
//            agreement or a checkpoint broadcast)
// Without the section watchdog both hang for 120 s; with it the job must end within about
// TIMEOUT_S with "MPI section timeout" naming the section.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include "comm/runtime/mpi_runtime.hpp"

namespace {
bool last_rank_by_launcher() {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (rank == nullptr) rank = std::getenv("PMI_RANK");
  if (size == nullptr) size = std::getenv("PMI_SIZE");
  return rank != nullptr && size != nullptr && std::atoi(rank) == std::atoi(size) - 1;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace microddp;
  if (argc != 3 || (std::strcmp(argv[1], "startup") != 0 && std::strcmp(argv[1], "section") != 0)) {
    std::fprintf(stderr, "usage: %s startup|section TIMEOUT_S\n", argv[0]);
    return 2;
  }
  const bool startup = std::strcmp(argv[1], "startup") == 0;
  const double timeout_s = std::atof(argv[2]);
  if (startup && last_rank_by_launcher()) std::this_thread::sleep_for(std::chrono::seconds(120));
  try {
    comm::MpiRuntime mpi(&argc, &argv, timeout_s);
    if (!startup) {
      if (mpi.rank() == mpi.size() - 1) {
        std::this_thread::sleep_for(std::chrono::seconds(120));
      } else {
        const auto watched = mpi.watch("the test's raw barrier");
        MPI_Barrier(mpi.world());
      }
    }
    std::printf("rank %d: no hang detected (the test expects one)\n", mpi.rank());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    comm::MpiRuntime::abort_all(1);
  }
}
