// log.cpp — rank-prefixed, line-atomic logging.
#include "core/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace microddp::core {

namespace {
std::atomic<int> g_rank{-1};
std::atomic<int> g_world{0};
std::atomic<int> g_level{static_cast<int>(LogLevel::Info)};
std::mutex g_mutex;
}  // namespace

void set_log_rank(int rank, int world_size) {
  g_rank.store(rank);
  g_world.store(world_size);
}
void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }
bool log_is_root() { return g_rank.load() <= 0; }

void log_line(LogLevel level, const std::string& line) {
  static const char* const kTags[] = {"debug", "", "warning", "error"};
  const char* tag = kTags[static_cast<int>(level)];
  std::string out = "[microddp";
  if (g_rank.load() >= 0) out += " r" + std::to_string(g_rank.load()) + "/" + std::to_string(g_world.load());
  out += "] ";
  if (*tag) out += std::string(tag) + ": ";
  out += line;
  out += '\n';
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fwrite(out.data(), 1, out.size(), stderr);
  std::fflush(stderr);
}

}  // namespace microddp::core
