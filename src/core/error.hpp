// error.hpp — the one error type of microddp and the check macros.
// Contract: library code throws microddp::core::Error (never exits); the message carries the rank
// (when known), the failing expression or library call, the library's own error string and
// file:line. `main` catches it, prints it once and aborts all ranks.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace microddp::core {

// Set once by the communication layer after MPI is up; -1 means "not known yet".
void set_error_rank(int rank);
int error_rank();

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Bad user input (CLI values, files, mismatched configuration). main maps this to exit code 2.
// `agreed` marks errors that every rank is known to raise identically (e.g. found by comparing
// all-gathered configurations): main can then shut MPI down cleanly instead of aborting the job.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what, bool agreed = false) : Error(what), agreed_(agreed) {}
  bool agreed() const { return agreed_; }

 private:
  bool agreed_;
};

// A failure of the run that every rank detected identically, from all-reduced or all-gathered
// information (non-finite loss/gradients under --on-nan abort, parameter divergence): main shuts
// MPI down cleanly and exits 1 on every rank instead of aborting the job (no MPI_Abort, so no
// rank is killed before it reports and the launcher's abort path is not needed).
class AgreedError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void throw_error(const std::string& what, const char* expr, const char* file, int line);
[[noreturn]] void throw_usage_error(const std::string& what, bool agreed = false);

}  // namespace microddp::core

// MDDP_CHECK(cond, msg): msg may use stream syntax, e.g. MDDP_CHECK(n > 0, "n=" << n).
#define MDDP_CHECK(cond, msg)                                                         \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::ostringstream mddp_check_os_;                                              \
      mddp_check_os_ << msg;                                                          \
      ::microddp::core::throw_error(mddp_check_os_.str(), #cond, __FILE__, __LINE__); \
    }                                                                                 \
  } while (0)

// MDDP_USAGE_CHECK: for user input; throws UsageError (exit code 2) with just the message.
#define MDDP_USAGE_CHECK(cond, msg)                              \
  do {                                                           \
    if (!(cond)) {                                               \
      std::ostringstream mddp_check_os_;                         \
      mddp_check_os_ << msg;                                     \
      ::microddp::core::throw_usage_error(mddp_check_os_.str()); \
    }                                                            \
  } while (0)

// MDDP_AGREED_USAGE_CHECK: a usage check whose outcome is identical on every rank.
#define MDDP_AGREED_USAGE_CHECK(cond, msg)                             \
  do {                                                                 \
    if (!(cond)) {                                                     \
      std::ostringstream mddp_check_os_;                               \
      mddp_check_os_ << msg;                                           \
      ::microddp::core::throw_usage_error(mddp_check_os_.str(), true); \
    }                                                                  \
  } while (0)
