// mpi_gtest_run.hpp — the body of main() for MPI GoogleTest programs (mpi_gtest_main.cpp is that
// main). A program that must first decide whether it can run at all (a GPU suite without GPUs) has
// its own main() that calls run_mpi_gtest with a skip check, so the harness stays written once.
#pragma once

#include <string>

#include "comm/runtime/mpi_runtime.hpp"

namespace microddp::testing {

// Why every rank skips the whole program, or "" to run its tests. Called on every rank once MPI is
// up and GoogleTest initialised (it may communicate); every rank must return the same.
using SkipCheck = std::string (*)(const comm::MpiRuntime& runtime);

// Parses the communication settings from the environment (as the app's main does: a bad value ends
// every rank with exit code 2 before MPI starts), brings MPI up (MpiRuntime), runs the tests on
// every rank, prints GoogleTest output on rank 0 only, and makes the exit code agree across ranks:
// if any rank failed a test, every rank returns 1, so `mpiexec` and ctest see the failure whichever
// rank saw it; 77 (ctest: skipped) when `skip` gave a reason or every test skipped. A rank that
// throws aborts the whole job (no hang).
int run_mpi_gtest(int argc, char** argv, SkipCheck skip = nullptr);

}  // namespace microddp::testing
