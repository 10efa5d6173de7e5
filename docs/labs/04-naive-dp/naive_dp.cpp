// Lab 04 — naive data parallelism: after backward, one blocking all-reduce per parameter gradient.
// Read docs/labs/04-naive-dp/README.md first. Build: cmake --build build; grade:
// ctest --test-dir build -L lab -R naive_dp (after configuring with -DMICRODDP_LAB_GRADERS=ON).
#include <cstdint>

#include "labs/lab_api.hpp"

namespace microddp::labs {

// Called on every rank after backward (`--strategy lab`). ctx.grads() lists this rank's gradients,
// one per parameter, in gradient-ready order; each is {name, data, count}. When this returns, every
// gradient on every rank must hold the gradient of the whole global batch — exactly the bits the
// production `naive` strategy leaves there.
// Available (src/labs/lab_api.hpp, GradSyncContext): ctx.grads(), ctx.rank(), ctx.world_size(),
// ctx.all_reduce_sum(data, count): sums count floats over all ranks, in place, blocking.
// (Does the mean need a division by ctx.world_size()? The README asks; the trainer's loss knows.)
void naive_data_parallel_sync(GradSyncContext& ctx) {
  // TODO(lab 04): write the synchronisation here, then delete the next line.
  lab_todo("04-naive-dp", "naive_data_parallel_sync", "docs/labs/04-naive-dp/naive_dp.cpp");
  (void)ctx;
}

}  // namespace microddp::labs
