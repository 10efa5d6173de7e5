// Lab 07 — the synchronisation primitives around training: broadcast (the initial parameters from
// rank 0), gather (results to one rank) and barrier.
// Read docs/labs/07-sync-primitives/README.md first. Build: cmake --build build; grade:
// ctest --test-dir build -L lab -R sync (after configuring with -DMICRODDP_LAB_GRADERS=ON).
#include <algorithm>
#include <cstdint>

#include "labs/lab_api.hpp"

namespace microddp::labs {

// Root's `count` floats in `data` end up in every rank's `data`, along a binomial tree. Work with
// the virtual rank v = (rank - root + n) % n, so the root is v = 0:
//   * v != 0 receives the whole buffer once, from virtual rank v - lowbit(v) (lowbit(v) = v & -v);
//   * then it sends the buffer to v + m for m = lowbit(v)/2, lowbit(v)/4, ..., 1 (the root: for every
//     power of two m < n, largest first), skipping v + m >= n.
// Turn a virtual rank back into a real one with (v + root) % n. ceil(log2 n) rounds in all.
// Available: comm.rank(), comm.size(), comm.send(ptr, count, to), comm.recv(ptr, count, from).
void binomial_broadcast(LabComm& comm, float* data, std::int64_t count, int root) {
  // TODO(lab 07): write the broadcast here, then delete the next line.
  lab_todo("07-sync-primitives", "binomial_broadcast", "docs/labs/07-sync-primitives/sync_primitives.cpp");
  (void)comm;
  (void)data;
  (void)count;
  (void)root;
}

// Every rank's `count` floats in `send` go to `root`, which stores rank i's block at
// recv + i*count (recv holds n*count floats on the root and is nullptr on every other rank). Every
// other rank sends its block once; the root receives the blocks in rank order straight into place
// and copies its own (unless send == recv + root*count: then it is in place already).
void linear_gather(LabComm& comm, const float* send, std::int64_t count, float* recv, int root) {
  // TODO(lab 07): write the gather here, then delete the next line.
  lab_todo("07-sync-primitives", "linear_gather", "docs/labs/07-sync-primitives/sync_primitives.cpp");
  (void)comm;
  (void)send;
  (void)count;
  (void)recv;
  (void)root;
}

// No rank returns before every rank has entered. Dissemination: for d = 1, 2, 4, ... < n, send an
// empty message (nullptr, 0 floats) to (rank + d) % n and receive one from (rank - d + n) % n — with
// comm.sendrecv, so that every rank can send and receive at once.
void dissemination_barrier(LabComm& comm) {
  // TODO(lab 07): write the barrier here, then delete the next line.
  lab_todo("07-sync-primitives", "dissemination_barrier", "docs/labs/07-sync-primitives/sync_primitives.cpp");
  (void)comm;
}

}  // namespace microddp::labs
