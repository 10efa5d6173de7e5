// status.cpp — the process-wide last error and NCCL_DEBUG warnings (status.hpp).
#include "status.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace cuda_emu::nccl {

namespace {

std::mutex g_last_error_mutex;
std::string& last_error() {
  static std::string* s = new std::string;  // never destroyed: stream workers may fail during exit
  return *s;
}

bool debug_warn_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("NCCL_DEBUG");
    if (v == nullptr) return false;
    return strcasecmp(v, "WARN") == 0 || strcasecmp(v, "INFO") == 0 || strcasecmp(v, "TRACE") == 0;
  }();
  return enabled;
}

}  // namespace

void set_last_error(const std::string& message) {
  std::lock_guard lock(g_last_error_mutex);
  last_error() = message;
}

const char* thread_copy(const std::string& message) {
  thread_local std::string copy;
  copy = message;
  return copy.c_str();
}

const char* last_error_for_this_thread() {
  std::lock_guard lock(g_last_error_mutex);
  return thread_copy(last_error());
}

void warn(const std::string& message) {
  if (debug_warn_enabled()) std::fprintf(stderr, "NCCL WARN [cuda_emu] %s\n", message.c_str());
}

}  // namespace cuda_emu::nccl
