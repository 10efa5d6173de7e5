// timer.hpp — monotonic wall-clock time in seconds/nanoseconds since a process-wide origin.
// Contract: now_ns() is steady (never goes backwards) and cheap (clock_gettime, no allocation).
#pragma once

#include <chrono>
#include <cstdint>

namespace microddp::core {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double now_s() { return static_cast<double>(now_ns()) * 1e-9; }

// Measures one interval: Stopwatch sw; ...; sw.elapsed_s().
class Stopwatch {
 public:
  Stopwatch() : start_(now_ns()) {}
  void restart() { start_ = now_ns(); }
  double elapsed_s() const { return static_cast<double>(now_ns() - start_) * 1e-9; }
  double elapsed_ms() const { return static_cast<double>(now_ns() - start_) * 1e-6; }

 private:
  std::int64_t start_;
};

}  // namespace microddp::core
