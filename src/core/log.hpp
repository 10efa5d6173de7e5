// log.hpp — rank-prefixed logging to stderr ("[microddp r1/4] ...").
// Contract: thread-safe (one line is written atomically); the rank prefix is set once by the
// communication layer. info() prints on every rank; use log_root() for rank-0-only output.
#pragma once

#include <sstream>
#include <string>

namespace microddp::core {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3 };

void set_log_rank(int rank, int world_size);
void set_log_level(LogLevel level);
LogLevel log_level();
void log_line(LogLevel level, const std::string& line);
bool log_is_root();  // true on rank 0 (or before ranks are known)

}  // namespace microddp::core

#define MDDP_LOG_IMPL(level, msg)                                                     \
  do {                                                                                \
    if (static_cast<int>(level) >= static_cast<int>(::microddp::core::log_level())) { \
      std::ostringstream mddp_log_os_;                                                \
      mddp_log_os_ << msg;                                                            \
      ::microddp::core::log_line(level, mddp_log_os_.str());                          \
    }                                                                                 \
  } while (0)

#define MDDP_DEBUG(msg) MDDP_LOG_IMPL(::microddp::core::LogLevel::Debug, msg)
#define MDDP_INFO(msg) MDDP_LOG_IMPL(::microddp::core::LogLevel::Info, msg)
#define MDDP_WARN(msg) MDDP_LOG_IMPL(::microddp::core::LogLevel::Warn, msg)
// Rank 0 only (for headers and summaries that every rank would print identically).
#define MDDP_INFO_ROOT(msg)                              \
  do {                                                   \
    if (::microddp::core::log_is_root()) MDDP_INFO(msg); \
  } while (0)
