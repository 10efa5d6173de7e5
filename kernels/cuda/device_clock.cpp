// device_clock.cpp — see device_clock.hpp.
#include "kernels/cuda/device_clock.hpp"

#include <cmath>

#include "core/timer.hpp"
#include "kernels/cuda/cuda_check.hpp"

namespace microddp::kernels {

DeviceClock::DeviceClock() {
  for (cudaEvent_t& e : events_) MDDP_CUDA_CHECK(cudaEventCreate(&e));  // with timing
}

DeviceClock::~DeviceClock() {
  for (cudaEvent_t e : events_) {
    if (e != nullptr) (void)cudaEventDestroy(e);
  }
}

void DeviceClock::anchor(cudaStream_t stream) {
  current_ ^= 1;
  ns_[current_] = core::now_ns();
  MDDP_CUDA_CHECK(cudaEventRecord(events_[current_], stream));
}

std::int64_t DeviceClock::host_ns(cudaEvent_t e) const {
  if (e == nullptr) return 0;
  // The older of the two anchors: every event converted was recorded after it (events are converted
  // within the anchor period that follows them), so the elapsed time is never negative, which
  // cudaEventElapsedTime does not document. Before the second anchor: the first.
  const int a = ns_[current_ ^ 1] != 0 ? current_ ^ 1 : current_;
  if (ns_[a] == 0) return 0;
  float ms = 0.0f;
  if (cudaEventElapsedTime(&ms, events_[a], e) != cudaSuccess) {
    (void)cudaGetLastError();  // not ready / not timed: non-sticky, must not surface elsewhere
    return 0;
  }
  return ns_[a] + static_cast<std::int64_t>(std::llround(static_cast<double>(ms) * 1e6));
}

}  // namespace microddp::kernels
