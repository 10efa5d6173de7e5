// hand_rolled_communicator.hpp — the backends built from our own algorithms over MPI point-to-point
// (p2p_algorithms.hpp): `naive`, `ring`, `rd` and `auto`. They differ only in the all-reduce
// algorithm; the other collectives are shared: ring all-gather, ring reduce-scatter, binomial-tree
// broadcast, linear scatter/gather, dissemination barrier.
//
// Contract: see communicator.hpp (async through the progress engine, like every backend). Host
// buffers only. `auto` picks the all-reduce per call: recursive doubling up to
// auto_rd_max_bytes() (measured on our 2-core machine, see the .cpp), the ring above.
// Tunables (equal on all ranks; read once at construction):
//   MICRODDP_RING_SEGMENT_BYTES  pipeline segment of ring/tree algorithms (default kDefaultSegmentBytes)
//   MICRODDP_AUTO_RD_MAX_BYTES   auto's switch point (default kAutoRdMaxBytes)
//   MICRODDP_P2P_MAX_MESSAGE_BYTES  largest single MPI message (p2p_transport.hpp)
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string_view>

#include "comm/communicator.hpp"
#include "comm/p2p_transport.hpp"

namespace microddp::comm {

enum class AllReduceAlgorithm : std::uint8_t { Naive, Ring, RecursiveDoubling, Auto };

class HandRolledCommunicator final : public Communicator {
 public:
  HandRolledCommunicator(MPI_Comm parent, AllReduceAlgorithm algorithm);
  ~HandRolledCommunicator() override;
  std::string_view name() const override;

  std::int64_t segment_bytes() const { return segment_bytes_; }
  std::int64_t auto_rd_max_bytes() const { return auto_rd_max_bytes_; }
  // Which all-reduce algorithm this backend runs for a message of `bytes` bytes.
  AllReduceAlgorithm all_reduce_choice(std::int64_t bytes) const;

 protected:
  void execute(const CollectiveCall& call) override;

 private:
  P2pTransport transport_;
  AllReduceAlgorithm algorithm_;
  std::int64_t segment_bytes_;
  std::int64_t auto_rd_max_bytes_;
};

}  // namespace microddp::comm
