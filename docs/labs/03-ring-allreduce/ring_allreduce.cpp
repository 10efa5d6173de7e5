// Lab 03 — the ring all-reduce: reduce-scatter, then all-gather, around a ring of ranks.
// Read docs/labs/03-ring-allreduce/README.md first. Build: cmake --build build; grade:
// ctest --test-dir build -L lab -R ring (after configuring with -DMICRODDP_LAB_GRADERS=ON).
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

// Sum `data` (count floats on every rank) over all ranks, in place, with the ring algorithm.
// Cut the buffer into n chunks (n = comm.size(); count need not divide by n, and may be smaller
// than n: some chunks are then empty). Rank r sends to (r + 1) % n and receives from (r - 1 + n) % n.
//   1. reduce-scatter, n - 1 steps: in step s rank r sends chunk (r - s - 1) mod n to the right and
//      receives chunk (r - s - 2) mod n from the left, which it ADDS to its own copy of that chunk.
//      Afterwards rank r holds the complete sum of chunk r (the chapter's and `microddp
//      ring-schedule`'s numbering).
//   2. all-gather, n - 1 steps: in step s rank r sends chunk (r - s) mod n to the right and
//      receives chunk (r - s - 1) mod n from the left, which it COPIES over its own.
// Each rank sends 2 (n - 1) chunks: 2 (n - 1) / n of the buffer, whatever n is (the grader checks).
// Available: comm.rank(), comm.size(), comm.sendrecv(send_ptr, send_count, to, recv_ptr, recv_count,
// from) (src/labs/lab_comm.hpp): use sendrecv, since every rank sends and receives at once.
void ring_all_reduce(LabComm& comm, float* data, std::int64_t count) {
  // TODO(lab 03): write the ring here, then delete the next line.
  lab_todo("03-ring-allreduce", "ring_all_reduce", "docs/labs/03-ring-allreduce/ring_allreduce.cpp");
  (void)comm;
  (void)data;
  (void)count;
}

}  // namespace microddp::labs
