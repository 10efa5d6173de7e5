// Reference solution of lab 12 (docs/labs/12-benchmark): an all-reduce timed as nccl-tests times it.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

LabBenchResult measure_all_reduce(LabBenchComm& comm, std::int64_t bytes, const LabBenchSettings& settings) {
  // Warm-up, untimed: the first calls pay for connections, first-touch page faults, cold caches.
  for (int i = 0; i < settings.warmup; ++i) comm.all_reduce(bytes);

  // Each timed batch starts together on every rank (the barrier), and only the all-reduces are
  // inside the two clock readings.
  std::vector<double> times(static_cast<std::size_t>(settings.reps));
  for (double& t : times) {
    comm.barrier();
    const double t0 = comm.now_s();
    for (int i = 0; i < settings.batch; ++i) comm.all_reduce(bytes);
    t = (comm.now_s() - t0) / settings.batch;
  }
  // Iteration by iteration, the collective took as long as its slowest rank: one exchange after the
  // timing, so none falls between the timed batches.
  comm.max_over_ranks(times);

  // The median over repetitions: one descheduled repetition moves a mean, not a median.
  std::sort(times.begin(), times.end());
  const std::size_t m = times.size() / 2;
  const double time_s = times.size() % 2 == 1 ? times[m] : (times[m - 1] + times[m]) / 2;

  LabBenchResult r;
  r.time_s = time_s;
  r.algbw_gbs = static_cast<double>(bytes) / time_s * 1e-9;
  const int n = comm.size();
  r.busbw_gbs = r.algbw_gbs * 2.0 * (n - 1) / n;
  return r;
}

}  // namespace microddp::labs
