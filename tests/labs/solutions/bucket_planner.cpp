// Lab 06 — reference solution (docs/labs/06-bucketing/bucket_planner.cpp is the starter).
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

std::vector<LabBucket> plan_buckets(const std::vector<LabParam>& params, std::int64_t cap_bytes,
                                    std::int64_t first_cap_bytes) {
  std::vector<LabBucket> plan;
  LabBucket open;
  bool has_open = false;
  for (int i = 0; i < static_cast<int>(params.size()); ++i) {
    const LabParam& p = params[static_cast<std::size_t>(i)];
    // The open bucket is number plan.size(): bucket 0 may have its own cap.
    const std::int64_t cap = plan.empty() && first_cap_bytes > 0 ? first_cap_bytes : cap_bytes;
    // Its slice with p: from its first parameter to the end of p, the padding between them included.
    if (has_open && (p.offset + p.count - open.offset) * kGradElementBytes > cap) {
      plan.push_back(open);
      has_open = false;
    }
    if (!has_open) {
      open = LabBucket{i, i, p.offset, 0};
      has_open = true;
    }
    open.end_param = i + 1;
    open.count = p.offset + p.count - open.offset;
  }
  if (has_open) plan.push_back(open);
  return plan;
}

}  // namespace microddp::labs
