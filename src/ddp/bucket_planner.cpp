// bucket_planner.cpp — greedy contiguous bucket planning (see bucket_planner.hpp).
#include "ddp/bucket_planner.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace microddp::ddp {

namespace {
// Parameters in index order, each starting where the previous one ends or at the next alignment
// boundary after it (model::param_layout's zero padding, which a slice all-reduces harmlessly).
void check_contiguous(const std::vector<model::ParamInfo>& params) {
  std::int64_t end = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    MDDP_CHECK(p.index == static_cast<int>(i),
               "parameter " << p.name << " has index " << p.index << ", expected " << i);
    MDDP_CHECK(p.offset == end || p.offset == model::align_param_count(end),
               "parameter " << p.name << " starts at element " << p.offset << ", but the previous one ends at " << end
                            << ": gradients are not laid out in gradient-ready order, so buckets would not be "
                               "contiguous slices");
    end = p.offset + p.count;
  }
}
}  // namespace

std::vector<Bucket> plan_buckets(const std::vector<model::ParamInfo>& params, std::int64_t cap_bytes,
                                 std::int64_t first_cap_bytes) {
  MDDP_CHECK(cap_bytes > 0, "bucket cap must be positive, got " << cap_bytes << " bytes");
  MDDP_CHECK(first_cap_bytes >= 0, "first bucket cap must be >= 0, got " << first_cap_bytes << " bytes");
  check_contiguous(params);
  std::vector<Bucket> plan;
  Bucket open;
  bool has_open = false;
  auto cap_of = [&](std::size_t bucket_index) {
    return bucket_index == 0 && first_cap_bytes > 0 ? first_cap_bytes : cap_bytes;
  };
  for (const auto& p : params) {
    // The bucket's slice runs from its first parameter to the end of p, padding included.
    const std::int64_t with_p = (has_open ? p.offset + p.count - open.offset : p.count) * model::kParamElementBytes;
    if (has_open && with_p > cap_of(plan.size())) {
      plan.push_back(open);
      has_open = false;
    }
    if (!has_open) {
      open = Bucket{static_cast<int>(plan.size()), p.index, p.index, p.offset, 0};
      has_open = true;
    }
    open.end_param = p.index + 1;
    open.count = p.offset + p.count - open.offset;
  }
  if (has_open) plan.push_back(open);
  return plan;
}

std::vector<Bucket> plan_per_parameter(const std::vector<model::ParamInfo>& params) {
  check_contiguous(params);
  std::vector<Bucket> plan;
  plan.reserve(params.size());
  for (const auto& p : params) plan.push_back(Bucket{p.index, p.index, p.index + 1, p.offset, p.count});
  return plan;
}

std::vector<Bucket> plan_one_bucket(const std::vector<model::ParamInfo>& params, std::int64_t flat_count) {
  check_contiguous(params);
  const std::int64_t end = params.empty() ? 0 : params.back().offset + params.back().count;
  MDDP_CHECK(flat_count >= end, "flat buffer of " << flat_count << " elements for parameters ending at " << end);
  return {Bucket{0, 0, static_cast<int>(params.size()), 0, flat_count}};
}

BucketCaps bucket_caps(const GradSyncOptions& options) {
  MDDP_USAGE_CHECK(options.bucket_mb > 0, "--bucket-mb must be > 0, got " << options.bucket_mb);
  return {std::max<std::int64_t>(1, mib_to_bytes(options.bucket_mb)), mib_to_bytes(options.first_bucket_mb)};
}

std::int64_t mib_to_bytes(double mib) {
  MDDP_CHECK(std::isfinite(mib) && mib >= 0, "bucket size must be a finite number of MiB >= 0, got " << mib);
  return static_cast<std::int64_t>(std::llround(mib * 1024.0 * 1024.0));
}

}  // namespace microddp::ddp
