// naive_allreduce.cpp — the baseline all-reduce: every rank sends its whole buffer to rank 0, rank 0
// reduces them in rank order and sends the result back to every rank, one after the other.
// Cost (docs/allreduce.md): 2(n-1) messages of S bytes through rank 0, i.e. ~2(n-1)(α + S·β) plus
// (n-1) reduction passes, all serialised at the root — the O(n) baseline the other algorithms beat.
// Rank 0 receives from rank i+1 into one half of a 2·S scratch while it reduces rank i's buffer
// from the other half. Identical bits: only rank 0 computes; the others receive its bytes.
#include "comm/algorithms/p2p_algorithms.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::comm {

using core::TensorView;

void naive_all_reduce(P2pTransport& t, TensorView send, TensorView recv, core::ReduceOp op) {
  if (recv.count == 0) return;
  const std::int64_t bytes = recv.bytes();
  if (t.rank() != 0) {  // the whole buffer to the root, the whole result back
    t.send(send.data, bytes, 0);
    t.recv(recv.data, bytes, 0);
    return;
  }
  copy_unless_same(recv, send);
  const int n = t.size();
  if (n == 1) return;
  char* scratch = t.scratch(2 * bytes);
  auto slot = [&](int i) { return TensorView(scratch + (i % 2) * bytes, recv.count, recv.dtype); };
  std::vector<MPI_Request>* pending[2] = {&t.list(0), &t.list(1)};
  t.irecv(slot(1).data, bytes, 1, *pending[1]);
  for (int i = 1; i < n; ++i) {
    if (i + 1 < n) t.irecv(slot(i + 1).data, bytes, i + 1, *pending[(i + 1) % 2]);
    P2pTransport::wait_all(*pending[i % 2]);
    kernels::host_reduce_into(recv, slot(i), op);  // ranks 0..i-1 (lower) first, then rank i
  }
  std::vector<MPI_Request>& sends = t.list(0);
  for (int i = 1; i < n; ++i) t.isend(recv.data, bytes, i, sends);
  P2pTransport::wait_all(sends);
}

}  // namespace microddp::comm
