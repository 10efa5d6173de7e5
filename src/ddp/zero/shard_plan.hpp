// shard_plan.hpp — how ZeRO cuts the flat buffers into per-rank shards (a pure function).
//
// Shards follow buckets. The bucket planner (bucket_planner.hpp) cuts the flat gradient buffer
// into contiguous buckets in gradient-ready order; here each bucket is first widened to end where
// the next one starts (the last one at the end of the flat buffer), so the buckets tile
// [0, flat_count) with no gaps: every element, alignment padding included, belongs to exactly one
// bucket. A bucket of E elements is then cut into `world` equal CHUNKS of c = floor(E / world)
// elements and a TAIL of t = E - world*c < world elements:
//
//   bucket b:  | chunk rank 0 | chunk rank 1 | ... | chunk rank n-1 | tail (< n) |
//              off_b          off_b + c      ...                      off_b + n*c   off_b + E
//
// One reduce-scatter over the world*c chunk elements gives rank r the summed gradient of its chunk
// (the communicator's reduce-scatter needs equal blocks, so the few tail elements cannot ride in it);
// the tail, when there is one, travels in a small all-reduce and is updated redundantly by every
// rank (at most world-1 elements per bucket, each rank keeps their optimizer state). After the
// update one all-gather per bucket brings every rank's updated chunk to everyone. Shards therefore
// cut through tensors freely and any world size (1 included) and any parameter count work.
//
// A rank's optimizer state (and, with --shard gradients, its reduced-gradient buffer) is laid out as
// [all its chunks, bucket by bucket | all tails, bucket by bucket]: contiguous, so one pass covers it.
//
// Every rank computes the same plan from the same layout, caps and world size, so the collectives
// match without negotiation (docs/design.md, invariants).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/enum_names.hpp"
#include "ddp/bucket_planner.hpp"
#include "model/param_layout.hpp"

namespace microddp::ddp::zero {

// --shard: none (plain DDP), optimizer (ZeRO-1), gradients (ZeRO-2).
enum class ShardMode : std::uint8_t { None, Optimizer, Gradients };
inline constexpr auto kShardModeNames = core::enum_names<ShardMode>(
    {{ShardMode::None, "none"}, {ShardMode::Optimizer, "optimizer"}, {ShardMode::Gradients, "gradients"}});
inline std::string_view shard_mode_name(ShardMode m) { return kShardModeNames.name(m); }
// "none" | "optimizer" | "gradients"; throws core::UsageError otherwise.
inline ShardMode parse_shard_mode(std::string_view name) { return kShardModeNames.parse(name, "--shard"); }
// Why a sharded step cannot be captured into a CUDA graph (ddp/step_graph.hpp); empty: it can.
std::string_view shard_graph_obstacle(ShardMode m);

struct ShardBucket {
  Bucket bucket;            // the planner's bucket (parameters, unwidened slice)
  std::int64_t offset = 0;  // widened slice [offset, offset + count) of the flat buffers
  std::int64_t count = 0;
  std::int64_t chunk = 0;        // elements per rank in the reduce-scatter / all-gather
  std::int64_t tail = 0;         // count - world*chunk, all-reduced and updated by every rank
  std::int64_t chunk_state = 0;  // where this rank's chunk sits in the rank's shard buffers
  std::int64_t tail_state = 0;   // where the tail sits in the rank's shard buffers
  std::int64_t own_offset(int rank) const { return offset + rank * chunk; }
  std::int64_t tail_offset(int world) const { return offset + world * chunk; }
};

struct ShardPlan {
  int world = 1;
  int rank = 0;
  std::int64_t flat_count = 0;
  std::vector<ShardBucket> buckets;
  std::int64_t chunk_count = 0;  // sum of the chunks: this rank's share proper
  std::int64_t tail_count = 0;   // sum of the tails: replicated on every rank
  std::int64_t state_count() const { return chunk_count + tail_count; }
};

// `buckets` from plan_buckets/plan_per_parameter over `params`; flat_count from model::flat_count.
ShardPlan plan_shards(const std::vector<model::ParamInfo>& params, std::int64_t flat_count,
                      const std::vector<Bucket>& buckets, int world, int rank);

}  // namespace microddp::ddp::zero
