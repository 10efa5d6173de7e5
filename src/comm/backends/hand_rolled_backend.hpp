// hand_rolled_backend.hpp — the host backends built from our own algorithms over MPI point-to-point
// (p2p_algorithms.hpp): `naive`, `ring`, `rd`, `rabenseifner`, `dbtree` and `auto`. They differ only
// in the all-reduce algorithm, which their BackendDescription names (backend_description.hpp;
// `auto`: recursive doubling up to CommConfig::auto_rd_max_bytes, above it the cheapest of ring,
// rabenseifner and dbtree in the α-β-γ model); the other collectives are shared: ring all-gather,
// ring reduce-scatter, broadcast (binomial tree; pipelined chain from
// CommConfig::chain_broadcast_min_bytes on), linear scatter/gather, dissemination barrier.
//
// Contract: see backend.hpp (a HostBackend: async through the communicator's progress engine).
// Host buffers only. Tunables come from CommConfig (comm_config.hpp), equal on all ranks:
// ring_segment_bytes (pipeline segment of the ring, tree and chain algorithms; capped at the largest
// message, since a segment is one message), p2p_max_message_bytes (p2p_transport.hpp) and
// chain_broadcast_min_bytes.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string_view>

#include "comm/backend.hpp"
#include "comm/backend_description.hpp"
#include "comm/comm_config.hpp"
#include "comm/transport/p2p_transport.hpp"

namespace microddp::comm {

class HandRolledBackend final : public HostBackend {
 public:
  // Collective over `parent`. `description` names the all-reduce algorithm(s): Naive, Ring,
  // RecursiveDoubling, Rabenseifner or DoubleBinaryTree (core::Error for any other).
  HandRolledBackend(MPI_Comm parent, BackendDescription description, const CommConfig& config);
  std::string_view name() const override { return description_.name; }

  std::int64_t segment_bytes() const { return segment_bytes_; }
  std::int64_t max_message_bytes() const { return transport_.max_message_bytes(); }
  std::int64_t chain_broadcast_min_bytes() const { return chain_broadcast_min_bytes_; }
  const BackendDescription& description() const { return description_; }

 protected:
  void execute(const CollectiveCall& call) override;

 private:
  BackendDescription description_;
  P2pTransport transport_;
  std::int64_t segment_bytes_;
  std::int64_t chain_broadcast_min_bytes_;
};

}  // namespace microddp::comm
