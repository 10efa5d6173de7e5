// mpi_gtest_main.cpp — main() for MPI GoogleTest programs: the harness of mpi_gtest_run.hpp (MPI up,
// rank-0 output, results agreed across ranks), with nothing to decide before the tests run.
#include "support/mpi_gtest_run.hpp"

int main(int argc, char** argv) { return microddp::testing::run_mpi_gtest(argc, argv); }
