// flat_collectives.hpp — every collective but the all-reduce, over one P2pTransport: the part the
// hand-rolled backends (naive, ring, rd, auto) and `hier` share. They differ only in their all-reduce
// (hier's runs inside the node, then across nodes); barrier, broadcast, scatter, gather,
// all-gather and reduce-scatter run the same flat algorithms over all ranks for both.
//
// Contract: `call` is a host-memory collective of any kind but AllReduce (an all-reduce is a
// programming error here: the backend dispatches it to its own algorithm); the caller has called
// t.begin(call.seq). segment_bytes is the pipeline granularity of the tree broadcast and the ring.
#pragma once

#include <cstdint>

#include "comm/transport/p2p_transport.hpp"
#include "comm/types.hpp"

namespace microddp::comm {

void run_flat_collective(P2pTransport& t, const CollectiveCall& call, std::int64_t segment_bytes);

}  // namespace microddp::comm
