// flat_collectives.hpp — every collective but the all-reduce, over one P2pTransport: the part the
// hand-rolled backends (naive, ring, rd, auto) and `hier` share. They differ only in their all-reduce
// (hier's runs inside the node, then across nodes); barrier, broadcast, scatter, gather,
// all-gather and reduce-scatter run the same flat algorithms over all ranks for both.
//
// Contract: `call` is a host-memory collective of any kind but AllReduce (an all-reduce is a
// programming error here: the backend dispatches it to its own algorithm); the caller has called
// t.begin(call.seq). segment_bytes is the pipeline granularity of the broadcasts and the ring; a
// broadcast of chain_broadcast_min_bytes or more runs the pipelined chain (broadcast_uses_chain).
#pragma once

#include <cstdint>

#include "comm/transport/p2p_transport.hpp"
#include "comm/types.hpp"

namespace microddp::comm {

void run_flat_collective(P2pTransport& t, const CollectiveCall& call, std::int64_t segment_bytes,
                         std::int64_t chain_broadcast_min_bytes);

// The broadcast's choice: the pipelined chain for messages of at least chain_min_bytes on 3 ranks or
// more (on 2 the chain and the tree are the same single link), the binomial tree otherwise.
constexpr bool broadcast_uses_chain(std::int64_t bytes, int ranks, std::int64_t chain_min_bytes) {
  return ranks > 2 && bytes >= chain_min_bytes;
}

}  // namespace microddp::comm
