// device_clock.hpp — host-clock times (core::now_ns) for CUDA events, so phases and collectives on
// a GPU are timed by the device itself without the host waiting for each one (a cudaLaunchHostFunc
// per stamp, or a stream synchronisation per phase, would each cost a host round trip).
// Contract:
//   * anchor(stream) is called when `stream` is idle (right after the host waited for it): it
//     records an anchor event there and notes the host time of the record; an idle stream completes
//     the record within microseconds, so that host time is the anchor's device time. No waiting.
//   * host_ns(e) = anchor host time + cudaEventElapsedTime(anchor, e), for a complete event `e`
//     (created with timing, i.e. without cudaEventDisableTiming) recorded on any stream of the same
//     device after the anchor before the current one (so an event may be converted after one more
//     anchor was taken, e.g. a step's events after the synchronisation that re-anchored); 0 when
//     it cannot be timed (not complete, no anchor yet).
//   * Re-anchoring at every synchronisation keeps the clocks together: cudaEventElapsedTime is a
//     float in ms (0.25 ms resolution an hour after the anchor) and the GPU's and host's clocks
//     drift by parts per million. Two anchor events alternate.
// Only in builds with CUDA (microddp_kernels_cuda); CUDA headers required.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace microddp::kernels {

class DeviceClock {
 public:
  DeviceClock();  // on the calling thread's current device
  ~DeviceClock();
  DeviceClock(const DeviceClock&) = delete;
  DeviceClock& operator=(const DeviceClock&) = delete;

  void anchor(cudaStream_t stream);
  std::int64_t host_ns(cudaEvent_t e) const;
  bool anchored() const { return ns_[current_] != 0; }

 private:
  cudaEvent_t events_[2] = {nullptr, nullptr};
  std::int64_t ns_[2] = {0, 0};  // host time of each anchor's record (0: never recorded)
  int current_ = 0;
};

}  // namespace microddp::kernels
