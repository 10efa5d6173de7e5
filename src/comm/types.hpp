// types.hpp — vocabulary of the communication layer: reduction ops, collective kinds, sync/async,
// and CollectiveCall, the complete description of one collective that backends execute.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/reduce_op.hpp"
#include "core/tensor_view.hpp"

namespace microddp::comm {

using core::reduce_op_name;
using core::ReduceOp;
enum class CollectiveKind : std::uint8_t { AllReduce, Barrier, Broadcast, Scatter, Gather, AllGather, ReduceScatter };
enum class Mode : std::uint8_t { Sync, Async };

std::string_view collective_name(CollectiveKind kind);

// One collective, fully described. Buffer conventions (c = per-rank block count, n = world size):
//   AllReduce      send.count == recv.count; in place when send.data == recv.data.
//   Barrier        no buffers.
//   Broadcast      recv is the buffer on every rank (root's contents are sent); send unused.
//   Scatter        root: send.count == n*c (rank r gets block r); every rank: recv.count == c.
//                  In place at root when recv.data == send.data + root*c elements.
//   Gather         every rank: send.count == c; root: recv.count == n*c (non-roots: recv ignored).
//                  In place at root when send.data == recv.data + root*c elements.
//   AllGather      send.count == c; recv.count == n*c. In place when send.data == recv.data + rank*c.
//   ReduceScatter  send.count == n*c; recv.count == c; rank r gets the reduction of block r.
//                  In place when recv.data == send.data (result lands in the first c elements).
// Mean is Sum followed by division by n (floating-point dtypes only).
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::Barrier;
  core::TensorView send;
  core::TensorView recv;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;
  std::uint64_t seq = 0;  // position in this communicator's collective sequence (same on every rank)
};

}  // namespace microddp::comm
