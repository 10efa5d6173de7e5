// lab_planner.cpp — see lab_planner.hpp.
#include "labs/lab_planner.hpp"

#include <sstream>

#include "core/error.hpp"

namespace microddp::labs {

std::vector<LabParam> lab_params(const std::vector<model::ParamInfo>& params) {
  std::vector<LabParam> out;
  out.reserve(params.size());
  for (const auto& p : params) out.push_back(LabParam{p.name, p.offset, p.count});
  return out;
}

std::string plan_structure_error(const std::vector<LabParam>& params, const std::vector<LabBucket>& plan) {
  std::ostringstream os;
  const int n = static_cast<int>(params.size());
  int next = 0;  // the first parameter no bucket holds yet
  for (std::size_t b = 0; b < plan.size(); ++b) {
    const LabBucket& k = plan[b];
    os << "bucket " << b << " (parameters [" << k.first_param << ", " << k.end_param << "), offset " << k.offset
       << ", count " << k.count << "): ";
    if (k.first_param != next) {
      os << "starts at parameter " << k.first_param << ", but "
         << (b == 0 ? std::string("the first bucket must start at parameter 0")
                    : "bucket " + std::to_string(b - 1) + " ended before parameter " + std::to_string(next))
         << " (buckets hold consecutive parameters in gradient-ready order, each exactly once)";
      return os.str();
    }
    if (k.end_param <= k.first_param || k.end_param > n) {
      os << (k.end_param <= k.first_param ? "holds no parameter" : "ends past the last parameter")
         << " (end_param must be in (" << k.first_param << ", " << n << "])";
      return os.str();
    }
    const LabParam& first = params[static_cast<std::size_t>(k.first_param)];
    const LabParam& last = params[static_cast<std::size_t>(k.end_param - 1)];
    const std::int64_t count = last.offset + last.count - first.offset;
    if (k.offset != first.offset || k.count != count) {
      os << "its slice must run from its first parameter's offset (" << first.offset << ") to the end of its last ("
         << last.offset + last.count << "): offset " << first.offset << ", count " << count
         << " (the padding between parameters included)";
      return os.str();
    }
    next = k.end_param;
    os.str("");
  }
  if (next != n) {
    os << "the plan's " << plan.size() << " bucket(s) end before parameter " << next << " of " << n
       << ": every parameter must be in a bucket";
    return os.str();
  }
  return "";
}

std::vector<ddp::Bucket> lab_plan_buckets(const std::vector<model::ParamInfo>& params, std::int64_t cap_bytes,
                                          std::int64_t first_cap_bytes) {
  const std::vector<LabParam> in = lab_params(params);
  const std::vector<LabBucket> plan = plan_buckets(in, cap_bytes, first_cap_bytes);
  const std::string error = plan_structure_error(in, plan);
  MDDP_AGREED_USAGE_CHECK(error.empty(), "lab 06 (docs/labs/06-bucketing/bucket_planner.cpp): plan_buckets returned "
                                         "a plan the bucketed strategy cannot run, cap "
                                             << cap_bytes << " bytes, first cap " << first_cap_bytes << ": " << error);
  std::vector<ddp::Bucket> out;
  out.reserve(plan.size());
  for (std::size_t b = 0; b < plan.size(); ++b) {
    const LabBucket& k = plan[b];
    out.push_back(ddp::Bucket{static_cast<int>(b), k.first_param, k.end_param, k.offset, k.count});
  }
  return out;
}

}  // namespace microddp::labs
