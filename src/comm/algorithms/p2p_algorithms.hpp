// p2p_algorithms.hpp — the hand-rolled collective algorithms over P2pTransport (one file per family):
//   naive_allreduce.cpp      naive_all_reduce: gather to rank 0, reduce in rank order, linear bcast
//   ring_collectives.cpp     ring_all_reduce (reduce-scatter + all-gather, pipelined segments),
//                            ring_all_gather, ring_reduce_scatter
//   recursive_doubling.cpp   rd_all_reduce (non-power-of-two ranks folded in first, out at the end)
//   rabenseifner.cpp         rabenseifner_all_reduce (recursive halving + recursive doubling, folded
//                            like rd)
//   double_binary_tree.cpp   double_binary_tree_all_reduce (two trees, half each, pipelined segments)
//   tree_collectives.cpp     tree_broadcast (binomial, segmented), chain_broadcast (pipelined chain),
//                            linear_scatter, linear_gather, dissemination_barrier
// Contract (all of them): blocking; host buffers; buffer conventions and in-place rules of
// CollectiveCall (types.hpp); any count >= 0 and any n >= 1; a count of 0 moves nothing and never
// touches the (possibly null) buffers. The caller has called t.begin(seq). Every all-reduce leaves
// bitwise identical results on all ranks (see each file for why). ReduceOp::Mean combines like Sum
// (the Communicator base scales afterwards). segment_bytes is the pipeline granularity.
#pragma once

#include <cstdint>

#include "comm/transport/p2p_transport.hpp"
#include "core/reduce_op.hpp"
#include "core/tensor_view.hpp"

namespace microddp::comm {

void naive_all_reduce(P2pTransport& t, core::TensorView send, core::TensorView recv, core::ReduceOp op);
void ring_all_reduce(P2pTransport& t, core::TensorView send, core::TensorView recv, core::ReduceOp op,
                     std::int64_t segment_bytes);
void rd_all_reduce(P2pTransport& t, core::TensorView send, core::TensorView recv, core::ReduceOp op);
void rabenseifner_all_reduce(P2pTransport& t, core::TensorView send, core::TensorView recv, core::ReduceOp op);
void double_binary_tree_all_reduce(P2pTransport& t, core::TensorView send, core::TensorView recv, core::ReduceOp op,
                                   std::int64_t segment_bytes);

void ring_all_gather(P2pTransport& t, core::TensorView send, core::TensorView recv, std::int64_t segment_bytes);
void ring_reduce_scatter(P2pTransport& t, core::TensorView send, core::TensorView recv, core::ReduceOp op,
                         std::int64_t segment_bytes);
void tree_broadcast(P2pTransport& t, core::TensorView buf, int root, std::int64_t segment_bytes);
void chain_broadcast(P2pTransport& t, core::TensorView buf, int root, std::int64_t segment_bytes);
void linear_scatter(P2pTransport& t, core::TensorView send, core::TensorView recv, int root);
void linear_gather(P2pTransport& t, core::TensorView send, core::TensorView recv, int root);
void dissemination_barrier(P2pTransport& t);

// Helpers shared by the algorithm files.
inline std::int64_t elem_size(const core::TensorView& v) {
  return static_cast<std::int64_t>(core::dtype_bytes(v.dtype));
}
// Copies src into dst (same count) unless they are the same memory.
void copy_unless_same(core::TensorView dst, core::TensorView src);

}  // namespace microddp::comm
