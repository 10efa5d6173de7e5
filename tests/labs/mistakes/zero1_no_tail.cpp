// A typical wrong lab 09 (the grader must fail it, saying why: labs.zero1_grader_catches_no_tail):
// the shard is right, but the step forgets the remainder — the chunks are reduce-scattered, updated
// and all-gathered, the tail (count mod world elements at the end) is never summed nor updated.
#include <cstdint>
#include <span>

#include "labs/lab_api.hpp"

namespace microddp::labs {

LabShard zero1_shard(std::int64_t count, int world, int rank) {
  LabShard s;
  s.chunk_count = count / world;
  s.chunk_begin = rank * s.chunk_count;
  s.tail_begin = world * s.chunk_count;
  s.tail_count = count - s.tail_begin;
  return s;
}

void zero1_reduce_gradients(Zero1Context& ctx) {
  const LabShard& s = ctx.shard();
  if (s.chunk_count > 0) ctx.reduce_scatter_sum(ctx.grads().data(), s.chunk_count);
}

void zero1_update(Zero1Context& ctx) {
  const LabShard& s = ctx.shard();
  ctx.adam_update(s.chunk_begin, ctx.grads().data(), 0, s.chunk_count);
  if (s.chunk_count > 0) ctx.all_gather(ctx.params().data(), s.chunk_count);
}

}  // namespace microddp::labs
