// agreed_usage_error.hpp — ranks agree on the outcome of a step that can fail with bad input (a
// data file that does not open, a device that is not there), so that the common case, every rank
// failing the same way, ends as one message and exit 2 everywhere instead of an MPI_Abort.
#pragma once

#include <functional>
#include <string>

#include "comm/runtime/mpi_runtime.hpp"

namespace microddp::run {

// Collective over the world, inside the runtime's watchdog section `section` (a string literal).
// `error`: this rank's failure message ("" = it succeeded). Returns when no rank failed. Otherwise
// a failing rank throws core::UsageError with its own message (agreed when every rank failed), and
// a rank that succeeded throws `elsewhere` (not agreed).
void agree_on_usage_error(const comm::MpiRuntime& mpi, const char* section, const std::string& error,
                          const std::string& elsewhere);

// Collective: `work` runs on rank 0 only (a file to read or write once) while the others wait in
// the watchdog section `section`. A core::UsageError it throws reaches every rank as one agreed
// UsageError with rank 0's message (exit 2 everywhere); any other error ends the job as usual.
void run_on_rank0(const comm::MpiRuntime& mpi, const char* section, const std::function<void()>& work);

}  // namespace microddp::run
