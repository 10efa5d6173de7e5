// shard_plan.cpp — see shard_plan.hpp.
#include "ddp/zero/shard_plan.hpp"

#include "core/error.hpp"

namespace microddp::ddp::zero {

std::string_view shard_graph_obstacle(ShardMode m) {
  return m == ShardMode::None ? std::string_view{} : "the next forward waits for parameter gathers";
}

ShardPlan plan_shards(const std::vector<model::ParamInfo>& params, std::int64_t flat_count,
                      const std::vector<Bucket>& buckets, int world, int rank) {
  MDDP_CHECK(world >= 1 && rank >= 0 && rank < world, "bad world size " << world << " / rank " << rank);
  MDDP_CHECK(!buckets.empty() && buckets.front().offset == 0,
             "shard plan: the bucket plan must start at element 0 of the flat buffers");
  const std::int64_t end = params.empty() ? 0 : params.back().offset + params.back().count;
  MDDP_CHECK(flat_count >= end, "flat buffer of " << flat_count << " elements for parameters ending at " << end);
  ShardPlan plan;
  plan.world = world;
  plan.rank = rank;
  plan.flat_count = flat_count;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    ShardBucket s;
    s.bucket = buckets[b];
    s.offset = buckets[b].offset;
    const std::int64_t next = b + 1 < buckets.size() ? buckets[b + 1].offset : flat_count;
    MDDP_CHECK(next >= s.offset + buckets[b].count, "bucket " << b << " overlaps the next one");
    s.count = next - s.offset;  // widened over the padding up to the next bucket (tiles the buffer)
    s.chunk = s.count / world;
    s.tail = s.count - s.chunk * world;
    s.chunk_state = plan.chunk_count;
    plan.chunk_count += s.chunk;
    plan.buckets.push_back(s);
  }
  for (ShardBucket& s : plan.buckets) {
    s.tail_state = plan.chunk_count + plan.tail_count;
    plan.tail_count += s.tail;
  }
  return plan;
}

}  // namespace microddp::ddp::zero
