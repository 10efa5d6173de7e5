// lab_planner.hpp — the seam of lab 06 (docs/labs/06-bucketing): `--strategy lab-bucketed` is the
// production `bucketed` strategy (ddp/planned_sync.hpp) driven by the plan of the student's
// labs::plan_buckets instead of ddp::plan_buckets.
//
// The student's plan is checked for STRUCTURE before anything runs on it (buckets in order, each
// a non-empty run of consecutive parameters, together covering every parameter once, each slice
// exactly its parameters' span with the padding between them): a plan that breaks it would
// all-reduce the wrong elements or skip some, so it is a UsageError naming the bucket. A plan that
// is valid but differs from the production planner's still trains correctly (only the grouping of
// collectives differs); the grader (tests/labs/grade_bucket_planner.cpp) is what compares them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ddp/bucket_planner.hpp"
#include "labs/lab_api.hpp"
#include "model/mlp.hpp"

namespace microddp::labs {

// The planner's input as lab 06 sees it (names are views into `params`).
std::vector<LabParam> lab_params(const std::vector<model::ParamInfo>& params);

// "" when `plan` is a structurally valid plan of `params` (see the file comment), else the first
// problem: which bucket, what was expected there, what it holds.
std::string plan_structure_error(const std::vector<LabParam>& params, const std::vector<LabBucket>& plan);

// The student's plan of `params` with these caps, checked, as the production planner's type.
std::vector<ddp::Bucket> lab_plan_buckets(const std::vector<model::ParamInfo>& params, std::int64_t cap_bytes,
                                          std::int64_t first_cap_bytes);

}  // namespace microddp::labs
