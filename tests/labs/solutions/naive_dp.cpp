// Reference solution of lab 04 (docs/labs/04-naive-dp). Try the lab before reading this.
#include "labs/lab_api.hpp"

namespace microddp::labs {

void naive_data_parallel_sync(GradSyncContext& ctx) {
  // One blocking all-reduce per parameter, in gradient-ready order: the same collectives in the
  // same order on every rank. No division: the trainer divided each rank's loss by the GLOBAL batch
  // size, so the sum over ranks is already the mean over the global batch.
  for (const LabGrad& g : ctx.grads()) ctx.all_reduce_sum(g.data, g.count);
}

}  // namespace microddp::labs
