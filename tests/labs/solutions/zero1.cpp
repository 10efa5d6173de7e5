// Lab 09 — reference solution (docs/labs/09-zero1/zero1.cpp is the starter).
#include <cstdint>
#include <span>

#include "labs/lab_api.hpp"

namespace microddp::labs {

LabShard zero1_shard(std::int64_t count, int world, int rank) {
  LabShard s;
  s.chunk_count = count / world;  // equal blocks, as large as they can be
  s.chunk_begin = rank * s.chunk_count;
  s.tail_begin = world * s.chunk_count;
  s.tail_count = count - s.tail_begin;  // the remainder, < world: every rank's
  return s;
}

void zero1_reduce_gradients(Zero1Context& ctx) {
  const LabShard& s = ctx.shard();
  const std::span<float> g = ctx.grads();
  // Block r of grads[0, world*chunk) is rank r's chunk; its sum lands in grads[0, chunk).
  if (s.chunk_count > 0) ctx.reduce_scatter_sum(g.data(), s.chunk_count);
  // The equal blocks leave the tail out: a small all-reduce, and every rank updates it.
  if (s.tail_count > 0) ctx.all_reduce_sum(g.data() + s.tail_begin, s.tail_count);
}

void zero1_update(Zero1Context& ctx) {
  const LabShard& s = ctx.shard();
  const std::span<float> g = ctx.grads();
  // Optimizer state: [chunk | tail]. The chunk's summed gradient is at grads[0, chunk).
  ctx.adam_update(s.chunk_begin, g.data(), 0, s.chunk_count);
  ctx.adam_update(s.tail_begin, g.data() + s.tail_begin, s.chunk_count, s.tail_count);
  // Each rank's updated chunk to every rank, in place: the parameters are whole again.
  if (s.chunk_count > 0) ctx.all_gather(ctx.params().data(), s.chunk_count);
}

}  // namespace microddp::labs
