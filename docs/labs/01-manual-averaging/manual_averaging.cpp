// Lab 01 — manual gradient averaging: combine the gradients of model replicas by hand.
// Read docs/labs/01-manual-averaging/README.md first. Build: cmake --build build; grade:
// ctest --test-dir build -L lab -R manual (after configuring with -DMICRODDP_LAB_GRADERS=ON).
#include <cstdint>
#include <span>

#include "labs/lab_api.hpp"

namespace microddp::labs {

// replicas[r] points to replica r's flat gradient buffer of `count` floats. Each replica computed
// its gradient on its own share of the global batch, with its loss divided by the GLOBAL batch size
// B (not by its share). Afterwards EVERY replica's buffer must hold the gradient of the whole global
// batch, element by element: add the replicas in replica order, ((g_0 + g_1) + g_2) + ..., and
// write the result back to every replica. (Should you divide by replicas.size()? The README asks.)
void combine_replica_gradients(std::span<float* const> replicas, std::int64_t count) {
  // TODO(lab 01): write the combination here, then delete the next line.
  lab_todo("01-manual-averaging", "combine_replica_gradients", "docs/labs/01-manual-averaging/manual_averaging.cpp");
  (void)replicas;
  (void)count;
}

}  // namespace microddp::labs
