// A typical wrong answer to lab 12 (tests/labs/CMakeLists.txt proves the grader names it): every rank
// reports the median of its OWN times, with no max over ranks — what "time it on rank 0" gives on rank
// 0. A repetition of a collective lasts until its slowest rank is done; this hides the slow rank.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

LabBenchResult measure_all_reduce(LabBenchComm& comm, std::int64_t bytes, const LabBenchSettings& settings) {
  for (int i = 0; i < settings.warmup; ++i) comm.all_reduce(bytes);
  std::vector<double> times(static_cast<std::size_t>(settings.reps));
  for (double& t : times) {
    comm.barrier();
    const double t0 = comm.now_s();
    for (int i = 0; i < settings.batch; ++i) comm.all_reduce(bytes);
    t = (comm.now_s() - t0) / settings.batch;
  }
  // The mistake: no comm.max_over_ranks(times) here.
  std::sort(times.begin(), times.end());
  const std::size_t m = times.size() / 2;
  const double time_s = times.size() % 2 == 1 ? times[m] : (times[m - 1] + times[m]) / 2;
  const int n = comm.size();
  const double algbw = static_cast<double>(bytes) / time_s * 1e-9;
  return {time_s, algbw, algbw * 2.0 * (n - 1) / n};
}

}  // namespace microddp::labs
