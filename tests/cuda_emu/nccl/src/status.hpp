// status.hpp — how the emulated NCCL reports failures internally: a Status is an ncclResult_t plus the
// message that ncclGetLastError() will show. Also the process-wide "last error" (NCCL keeps one per
// process too) and NCCL_DEBUG=WARN|INFO warnings on stderr.
//
// Contract: every failing path builds its Status with fail(); the API layer (nccl_api.cpp) records it
// with set_last_error() before returning the code. Messages start with what failed, from the point of
// view of the rank that reports it ("rank 1: ..."), and name the other side where there is one.
#pragma once

#include <nccl.h>

#include <sstream>
#include <string>
#include <utility>

namespace cuda_emu::nccl {

struct Status {
  ncclResult_t code = ncclSuccess;
  std::string message;
  bool ok() const { return code == ncclSuccess; }
};

inline Status success() { return {}; }
inline Status fail(ncclResult_t code, std::string message) { return {code, std::move(message)}; }

// Concatenates anything that has an operator<< (messages are built on error paths only).
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}

// The process-wide last error; ncclGetLastError(nullptr) shows it. Thread-safe.
void set_last_error(const std::string& message);
// A copy of the last error owned by the calling thread (valid until its next call).
const char* last_error_for_this_thread();
// Keeps `message` as a thread-local copy and returns it (for per-communicator messages).
const char* thread_copy(const std::string& message);

// Prints "NCCL WARN <message>" on stderr when NCCL_DEBUG is WARN, INFO or TRACE (as NCCL does).
void warn(const std::string& message);

}  // namespace cuda_emu::nccl
