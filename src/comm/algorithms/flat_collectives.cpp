// flat_collectives.cpp — the non-all-reduce collectives over one transport (see flat_collectives.hpp).
#include "comm/algorithms/flat_collectives.hpp"

#include "comm/algorithms/p2p_algorithms.hpp"
#include "core/error.hpp"

namespace microddp::comm {

void run_flat_collective(P2pTransport& t, const CollectiveCall& call, std::int64_t segment_bytes,
                         std::int64_t chain_broadcast_min_bytes) {
  switch (call.kind) {
    case CollectiveKind::Barrier:
      dissemination_barrier(t);
      return;
    case CollectiveKind::Broadcast:
      if (broadcast_uses_chain(call.recv.bytes(), t.size(), chain_broadcast_min_bytes)) {
        chain_broadcast(t, call.recv, call.root, segment_bytes);
      } else {
        tree_broadcast(t, call.recv, call.root, segment_bytes);
      }
      return;
    case CollectiveKind::Scatter:
      linear_scatter(t, call.send, call.recv, call.root);
      return;
    case CollectiveKind::Gather:
      linear_gather(t, call.send, call.recv, call.root);
      return;
    case CollectiveKind::AllGather:
      ring_all_gather(t, call.send, call.recv, segment_bytes);
      return;
    case CollectiveKind::ReduceScatter:
      ring_reduce_scatter(t, call.send, call.recv, call.op, segment_bytes);
      return;
    case CollectiveKind::AllReduce:
      break;  // each backend runs its own all-reduce
  }
  MDDP_CHECK(false, "flat collectives: cannot run collective kind " << static_cast<int>(call.kind));
}

}  // namespace microddp::comm
