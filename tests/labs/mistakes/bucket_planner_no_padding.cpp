// A typical wrong lab 06 (the grader must fail it, saying why: labs.bucket_grader_catches_no_padding):
// a bucket's size is summed from its parameters' counts, leaving out the alignment padding between
// them, so some buckets' slices are larger than their cap.
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

std::vector<LabBucket> plan_buckets(const std::vector<LabParam>& params, std::int64_t cap_bytes,
                                    std::int64_t first_cap_bytes) {
  std::vector<LabBucket> plan;
  LabBucket open;
  bool has_open = false;
  std::int64_t packed = 0;  // the open bucket's parameter elements (the mistake: no padding)
  for (int i = 0; i < static_cast<int>(params.size()); ++i) {
    const LabParam& p = params[static_cast<std::size_t>(i)];
    const std::int64_t cap = plan.empty() && first_cap_bytes > 0 ? first_cap_bytes : cap_bytes;
    if (has_open && (packed + p.count) * kGradElementBytes > cap) {
      plan.push_back(open);
      has_open = false;
    }
    if (!has_open) {
      open = LabBucket{i, i, p.offset, 0};
      has_open = true;
      packed = 0;
    }
    open.end_param = i + 1;
    open.count = p.offset + p.count - open.offset;
    packed += p.count;
  }
  if (has_open) plan.push_back(open);
  return plan;
}

}  // namespace microddp::labs
