// Lab 12 — benchmark an all-reduce the way nccl-tests does, then fit α and β to it.
// Read docs/labs/12-benchmark/README.md first. Build: cmake --build build --target lab_grade_benchmark
// microddp; grade: ctest --test-dir build -L lab -R benchmark (after configuring with
// -DMICRODDP_LAB_GRADERS=ON); run on a real backend: mpirun -np 2 build/microddp lab-bench --backend ring.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

// The time of one all-reduce of `bytes` bytes (comm.all_reduce(bytes)), measured so that the number
// means the same thing on every run and every rank count:
//   1. settings.warmup all-reduces first, untimed;
//   2. then settings.reps timed batches. Each batch: comm.barrier(), read comm.now_s(),
//      settings.batch all-reduces back to back, read the clock again; this rank's time of one
//      all-reduce in that batch = (difference) / settings.batch. Only the all-reduces are timed;
//   3. for each batch, the time of the SLOWEST rank (comm.max_over_ranks: an all-reduce with max);
//   4. time_s = the median of those reps maxima (the middle value; the mean of the two middle ones
//      for an even count);
//   5. algbw_gbs = bytes / time_s in GB/s (1e9 bytes per second), busbw_gbs = algbw_gbs · 2(n-1)/n
//      with n = comm.size() (nccl-tests' all-reduce bus bandwidth; 0 on one rank).
// Every rank returns the same result.
LabBenchResult measure_all_reduce(LabBenchComm& comm, std::int64_t bytes, const LabBenchSettings& settings) {
  // TODO(lab 12): write the benchmark here, then delete the next line.
  lab_todo("12", "measure_all_reduce", "docs/labs/12-benchmark/benchmark.cpp");
  (void)comm;
  (void)bytes;
  (void)settings;
  return {};
}

}  // namespace microddp::labs
