// Lab 09 — ZeRO stage 1: shard the optimizer state.
// Read docs/labs/09-zero1/README.md first. Build: cmake --build build --target lab_grade_zero1 microddp;
// grade: ctest --test-dir build -L lab -R zero1 (after configuring with -DMICRODDP_LAB_GRADERS=ON).
#include <cstdint>

#include "labs/lab_api.hpp"

namespace microddp::labs {

// Rank `rank`'s shard of `count` elements over `world` ranks (LabShard in src/labs/lab_api.hpp):
//   * `world` equal chunks, as large as possible, in rank order from element 0: rank r's chunk is
//     [chunk_begin, chunk_begin + chunk_count);
//   * the tail: the elements the chunks leave over at the end (fewer than `world`, often none),
//     [tail_begin, tail_begin + tail_count), the same on every rank.
// Every count and world must work: 0 elements, fewer elements than ranks, one rank.
LabShard zero1_shard(std::int64_t count, int world, int rank) {
  // TODO(lab 09): write the shard here, then delete the next line.
  lab_todo("09-zero1", "zero1_shard", "docs/labs/09-zero1/zero1.cpp");
  (void)count;
  (void)world;
  (void)rank;
  return {};
}

// After backward: ctx.grads() holds this rank's own gradient. Return when
//   * ctx.grads()[0, chunk_count) holds the SUM over all ranks of the gradient of this rank's chunk
//     (that is where the in-place ctx.reduce_scatter_sum leaves block ctx.rank()), and
//   * ctx.grads()[tail_begin, tail_begin + tail_count) holds the summed tail.
// Nothing to divide: each rank's loss is already divided by the GLOBAL batch size.
void zero1_reduce_gradients(Zero1Context& ctx) {
  // TODO(lab 09): reduce-scatter here, then delete the next line.
  lab_todo("09-zero1", "zero1_reduce_gradients", "docs/labs/09-zero1/zero1.cpp");
  (void)ctx;
}

// The optimizer step. The reduced gradients are where zero1_reduce_gradients left them. Update
//   * this rank's chunk: parameters [chunk_begin, chunk_begin + chunk_count), optimizer state
//     [0, chunk_count), and
//   * the tail: parameters [tail_begin, tail_begin + tail_count), state [chunk_count, state_count()),
// with ctx.adam_update, then make every rank's ctx.params() whole again (ctx.all_gather).
void zero1_update(Zero1Context& ctx) {
  // TODO(lab 09): update the shard and all-gather here, then delete the next line.
  lab_todo("09-zero1", "zero1_update", "docs/labs/09-zero1/zero1.cpp");
  (void)ctx;
}

}  // namespace microddp::labs
