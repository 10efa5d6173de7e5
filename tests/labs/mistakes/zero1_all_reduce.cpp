// A typical wrong lab 09 (the grader must fail it, saying why: labs.zero1_grader_catches_all_reduce):
// the gradient is all-reduced whole, as in DDP, and then each rank updates its shard and
// all-gathers. The parameters come out right, but every rank received the whole summed gradient
// (the all-reduce moves as much as reduce-scatter + all-gather) and then the all-gather moves the
// parameters again: twice the communication of DDP, for the optimizer-state saving alone.
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
  const std::span<float> g = ctx.grads();
  ctx.all_reduce_sum(g.data(), static_cast<std::int64_t>(g.size()));
}

void zero1_update(Zero1Context& ctx) {
  const LabShard& s = ctx.shard();
  const std::span<float> g = ctx.grads();
  ctx.adam_update(s.chunk_begin, g.data() + s.chunk_begin, 0, s.chunk_count);
  ctx.adam_update(s.tail_begin, g.data() + s.tail_begin, s.chunk_count, s.tail_count);
  if (s.chunk_count > 0) ctx.all_gather(ctx.params().data(), s.chunk_count);
}

}  // namespace microddp::labs
