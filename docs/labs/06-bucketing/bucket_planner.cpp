// Lab 06 — bucketing: your bucket planner.
// Read docs/labs/06-bucketing/README.md first. Build: cmake --build build; grade:
// ctest --test-dir build -L lab -R bucket (after configuring with -DMICRODDP_LAB_GRADERS=ON).
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

// Cut the flat gradient buffer into all-reduce buckets, exactly as the production planner does
// (its contract: src/ddp/bucket_planner.hpp):
//   * params[i] is parameter i in gradient-ready order: its gradient is elements
//     [offset, offset + count) of the flat buffer. A parameter starts right after the previous one
//     ends or at the next 256-byte boundary after it; the gap is zero padding.
//   * A bucket is a run of consecutive parameters [first_param, end_param). Its slice is
//     [offset, offset + count): from its first parameter's offset to the end of its last parameter,
//     padding included. Its size is count * kGradElementBytes bytes.
//   * Greedy, in order: a parameter joins the open bucket unless that would make the bucket's size
//     exceed its cap; then the open bucket is closed and the parameter opens a new one (so a
//     parameter larger than the cap gets a bucket of its own).
//   * The cap of bucket 0 is first_cap_bytes when that is > 0; every other bucket's is cap_bytes.
// Return the buckets in order (bucket 0 first). No parameters: no buckets.
std::vector<LabBucket> plan_buckets(const std::vector<LabParam>& params, std::int64_t cap_bytes,
                                    std::int64_t first_cap_bytes) {
  // TODO(lab 06): write the planner here, then delete the next line.
  lab_todo("06-bucketing", "plan_buckets", "docs/labs/06-bucketing/bucket_planner.cpp");
  (void)params;
  (void)cap_bytes;
  (void)first_cap_bytes;
  return {};
}

}  // namespace microddp::labs
