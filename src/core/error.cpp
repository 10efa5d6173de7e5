// error.cpp — formatting of microddp errors (rank, expression, file:line).
#include "core/error.hpp"

#include <atomic>

namespace microddp::core {

namespace {
std::atomic<int> g_error_rank{-1};
}

void set_error_rank(int rank) { g_error_rank.store(rank); }
int error_rank() { return g_error_rank.load(); }

void throw_error(const std::string& what, const char* expr, const char* file, int line) {
  std::ostringstream os;
  const int rank = error_rank();
  if (rank >= 0) os << "[rank " << rank << "] ";
  os << what << " (check `" << expr << "` failed at " << file << ":" << line << ")";
  throw Error(os.str());
}

void throw_usage_error(const std::string& what, bool agreed) { throw UsageError(what, agreed); }

}  // namespace microddp::core
