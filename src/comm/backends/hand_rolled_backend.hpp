// hand_rolled_backend.hpp — the host backends built from our own algorithms over MPI point-to-point
// (p2p_algorithms.hpp): `naive`, `ring`, `rd` and `auto`. They differ only in the all-reduce
// algorithm, which their BackendDescription names (backend_description.hpp; `auto`: recursive
// doubling up to CommConfig::auto_rd_max_bytes, the ring above); the other collectives are shared:
// ring all-gather, ring reduce-scatter, binomial-tree broadcast, linear scatter/gather,
// dissemination barrier.
//
// Contract: see backend.hpp (a HostBackend: async through the communicator's progress engine).
// Host buffers only. Tunables come from CommConfig (comm_config.hpp), equal on all ranks:
// ring_segment_bytes (pipeline segment of ring/tree algorithms; capped at the largest message,
// since a segment is one message) and p2p_max_message_bytes (p2p_transport.hpp).
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
  // Collective over `parent`. `description` names the all-reduce algorithm(s): Naive, Ring or
  // RecursiveDoubling (core::Error for any other).
  HandRolledBackend(MPI_Comm parent, BackendDescription description, const CommConfig& config);
  std::string_view name() const override { return description_.name; }

  std::int64_t segment_bytes() const { return segment_bytes_; }
  std::int64_t max_message_bytes() const { return transport_.max_message_bytes(); }
  const BackendDescription& description() const { return description_; }

 protected:
  void execute(const CollectiveCall& call) override;

 private:
  BackendDescription description_;
  P2pTransport transport_;
  std::int64_t segment_bytes_;
};

}  // namespace microddp::comm
