// leak_after_mpi_init.cpp — the ASan build's proof that leak checking still works around MPI: this
// program leaks one block of a recognisable size (4242 ints) after MPI_Init, and the test
// sanitizers.leak_after_mpi_init (tests/sanitizers/CMakeLists.txt) passes only if LeakSanitizer
// reports exactly that block. mpi_leak_scope.cpp turns leak checking off inside MPI_Init and
// MPI_Finalize; a scope that leaked out of those calls (or a suppression that matched too much)
// would hide this leak and fail the test.
#include <mpi.h>

#include <cstdio>

namespace {
int* volatile g_sink = nullptr;  // volatile: the allocation cannot be optimised away
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  g_sink = new int[4242];
  g_sink[0] = 1;
  g_sink = nullptr;  // the only pointer is gone: a leak
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  std::puts("leaked 4242 ints after MPI_Init");
  return 0;
}
