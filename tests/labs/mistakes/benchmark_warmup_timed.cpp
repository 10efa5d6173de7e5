// A typical wrong answer to lab 12 (tests/labs/CMakeLists.txt proves the grader names it): the warm-up
// iterations are timed like the others and kept in the sample, so their first-call costs
// (connections, page faults, cold caches) move the median.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

LabBenchResult measure_all_reduce(LabBenchComm& comm, std::int64_t bytes, const LabBenchSettings& settings) {
  std::vector<double> times;
  for (int it = 0; it < settings.warmup + settings.reps; ++it) {  // the mistake: warm-up in the sample
    comm.barrier();
    const double t0 = comm.now_s();
    const int calls = it < settings.warmup ? 1 : settings.batch;
    for (int i = 0; i < calls; ++i) comm.all_reduce(bytes);
    times.push_back((comm.now_s() - t0) / calls);
  }
  comm.max_over_ranks(times);
  std::sort(times.begin(), times.end());
  const std::size_t m = times.size() / 2;
  const double time_s = times.size() % 2 == 1 ? times[m] : (times[m - 1] + times[m]) / 2;
  const int n = comm.size();
  const double algbw = static_cast<double>(bytes) / time_s * 1e-9;
  return {time_s, algbw, algbw * 2.0 * (n - 1) / n};
}

}  // namespace microddp::labs
