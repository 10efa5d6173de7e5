// bucket_planner.hpp — splits the flat gradient buffer into all-reduce buckets (a pure function).
//
// Parameters arrive in gradient-ready order (index 0 first), and the flat gradient buffer is laid
// out in that order (model/param_layout.hpp), so a run of consecutive parameters is one contiguous
// slice: a bucket is just (offset, count) into the buffer, with no packing copy. Parameters start
// 256-byte aligned; a bucket's slice includes the zero padding between its parameters, and its
// size against the cap is that of the slice.
//
// Rule (greedy, in gradient-ready order): a parameter joins the open bucket unless that would make
// the bucket exceed its cap, in which case the bucket is closed and a new one opened. So a bucket
// never exceeds its cap, except a bucket holding one parameter that is by itself larger than the
// cap (it gets a bucket of its own). The first bucket (the one ready first, i.e. the output layer's
// gradients) may have its own, smaller cap, like PyTorch DDP's 1 MiB first bucket: a small first
// bucket starts communication as early as possible in backward.
//
// Every rank computes the same plan from the same parameters and caps, so buckets match up across
// ranks without negotiation (docs/design.md, invariants).
#pragma once

#include <cstdint>
#include <vector>

#include "ddp/grad_sync_options.hpp"
#include "model/mlp.hpp"

namespace microddp::ddp {

struct Bucket {
  int index = 0;        // launch order (0 = first ready)
  int first_param = 0;  // parameters [first_param, end_param) in gradient-ready order
  int end_param = 0;
  std::int64_t offset = 0;  // elements from the start of the flat gradient buffer
  std::int64_t count = 0;   // elements
  std::int64_t bytes() const { return count * model::kParamElementBytes; }
  int num_params() const { return end_param - first_param; }
};

// cap_bytes > 0: the usual bucket cap. first_cap_bytes: the first bucket's cap; 0 = same as cap.
// Throws core::Error if the parameters are not contiguous in index order (offset_{i+1} is
// offset_i + count_i, or that rounded up to model::kParamAlignFloats) or a cap is not positive.
std::vector<Bucket> plan_buckets(const std::vector<model::ParamInfo>& params, std::int64_t cap_bytes,
                                 std::int64_t first_cap_bytes = 0);

// One bucket per parameter (the `overlap` strategy's plan).
std::vector<Bucket> plan_per_parameter(const std::vector<model::ParamInfo>& params);

// One bucket holding every parameter: the whole flat buffer [0, flat_count), its trailing padding
// included (flat_count >= the end of the last parameter).
std::vector<Bucket> plan_one_bucket(const std::vector<model::ParamInfo>& params, std::int64_t flat_count);

// MiB (as given on the command line) -> bytes, rounded to the nearest byte.
std::int64_t mib_to_bytes(double mib);

// The caps plan_buckets takes, in bytes: --bucket-mb (at least one byte) and --first-bucket-mb
// (0: the same as the cap). A non-positive --bucket-mb is a UsageError.
struct BucketCaps {
  std::int64_t cap_bytes = 0, first_cap_bytes = 0;
};
BucketCaps bucket_caps(const GradSyncOptions& options);

}  // namespace microddp::ddp
