// Reference solution of lab 07 (docs/labs/07-sync-primitives). Try the lab before reading this.
// The production versions (src/comm/algorithms/tree_collectives.cpp) add: any dtype, segments that a deep tree
// forwards as soon as they arrive, non-blocking sends to all children at once, and the root's
// receives of a gather all posted together.
#include <algorithm>
#include <cstdint>

#include "labs/lab_api.hpp"

namespace microddp::labs {

void binomial_broadcast(LabComm& comm, float* data, std::int64_t count, int root) {
  const int n = comm.size();
  if (n == 1 || count == 0) return;
  const int v = (comm.rank() - root + n) % n;
  int low = 1;  // the root: every power of two below n; others: lowbit(v)
  if (v == 0) {
    while (low < n) low *= 2;
  } else {
    low = v & -v;
    comm.recv(data, count, (v - low + root) % n);
  }
  for (int m = low / 2; m >= 1; m /= 2) {  // largest subtree first: it has the most forwarding to do
    if (v + m < n) comm.send(data, count, (v + m + root) % n);
  }
}

void linear_gather(LabComm& comm, const float* send, std::int64_t count, float* recv, int root) {
  const int n = comm.size(), r = comm.rank();
  if (count == 0) return;
  if (r != root) {
    comm.send(send, count, root);
    return;
  }
  for (int i = 0; i < n; ++i) {
    if (i != root) comm.recv(recv + i * count, count, i);
  }
  float* mine = recv + root * count;
  if (send != mine) std::copy(send, send + count, mine);
}

void dissemination_barrier(LabComm& comm) {
  const int n = comm.size(), r = comm.rank();
  for (int d = 1; d < n; d *= 2) comm.sendrecv(nullptr, 0, (r + d) % n, nullptr, 0, (r - d + n) % n);
}

}  // namespace microddp::labs
