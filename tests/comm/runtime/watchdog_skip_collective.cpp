// watchdog_skip_collective.cpp — fault program for the watchdog test: the last rank skips one
// all-reduce that every other rank issues, then all ranks call a barrier. Without the watchdog
// this hangs forever (the others wait in the all-reduce, the last rank in the barrier); with
// --comm-timeout it must end the job non-zero with a report naming the collective.
// Usage: watchdog_skip_collective BACKEND TIMEOUT_S
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "comm/factory.hpp"
#include "comm/runtime/mpi_runtime.hpp"

int main(int argc, char** argv) {
  using namespace microddp;
  try {
    comm::MpiRuntime mpi(&argc, &argv);
    if (argc != 3) {
      std::fprintf(stderr, "usage: %s BACKEND TIMEOUT_S\n", argv[0]);
      return 2;
    }
    auto c = comm::make_communicator(argv[1], mpi);
    c->set_comm_timeout(std::atof(argv[2]));
    std::vector<float> x(1000, 1.0f);
    c->all_reduce(core::TensorView::of(x.data(), 1000), comm::ReduceOp::Sum);  // everyone: fine
    if (mpi.rank() != mpi.size() - 1) {
      c->all_reduce(core::TensorView::of(x.data(), 1000), comm::ReduceOp::Sum);  // the last rank skips it
    }
    c->barrier();
    std::printf("rank %d: no hang detected (the test expects one)\n", mpi.rank());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    comm::MpiRuntime::abort_all(1);
  }
}
