// comm_config.hpp — the settings of the communication layer (CommConfig): their defaults, and their
// parsing from environment variables. One definition of every tunable: backends, the factory's
// backend descriptions and the performance model read the values from here. (The communicator's
// fault-injection hooks are points of a core::FaultPlan, comm/communicator.hpp.)
//
// Contract:
//   * The library never reads the process environment itself: the app (and the test harness) calls
//     parse_comm_config() once with a lookup function, before MPI starts, and passes the result to
//     the factory. So every value a backend uses is visible at one call site,
//     and a bad value is a core::UsageError (exit code 2) naming the variable, on every rank alike.
//   * Every rank must run with the same CommConfig (the launcher exports the same environment):
//     segment sizes and message limits decide which messages the ranks exchange.
//   * Variables (names and meaning are documented for users; tests set them):
//       MICRODDP_RING_SEGMENT_BYTES     pipeline segment of the ring and the tree broadcast, >= 1
//       MICRODDP_P2P_MAX_MESSAGE_BYTES  largest single MPI message of the hand-rolled backends,
//                                       in [1, INT_MAX]
//       MICRODDP_AUTO_RD_MAX_BYTES      `auto`: recursive doubling up to this many bytes, >= 1
//       MICRODDP_AUTO_ALPHA_US          `auto` above that: the link it models (α in µs, β and γ in
//       MICRODDP_AUTO_BETA_NS_PER_BYTE  ns per byte sent / reduced), numbers >= 0, to choose the
//       MICRODDP_AUTO_GAMMA_NS_PER_BYTE cheapest of ring, rabenseifner and dbtree
//       MICRODDP_CHAIN_BROADCAST_MIN_BYTES  hand-rolled broadcast: a pipelined chain from this many
//                                       bytes on (3 ranks or more), the binomial tree below, >= 1
//       MICRODDP_NCCL_TIMEOUT_S         NCCL backends' wait limit in seconds, >= 0 (0 = none);
//                                       empty = the default
//       MICRODDP_HIER_NODE_SIZES        `hier`: nodes "K" (ranks [iK, (i+1)K) on node i) or "a,b,c"
//                                       (one size per node) instead of the launcher's
//                                       (hier_topology.hpp); unset or empty = the launcher's
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "comm/collective_costs.hpp"
#include "core/env_lookup.hpp"

namespace microddp::comm {

// Pipeline segment of the ring and the tree broadcast. Measured on an idle 2-core machine, np=2
// (docs/allreduce.md, "Segment size"): with many small segments in flight at once (256 KiB at
// 64 MiB = 128 outstanding messages per step; 64 KiB at 16 MiB) the ring collapsed to 0.55-0.6 GB/s
// busbw, while 1-32 MiB segments all gave 2.8-3.3 GB/s at 64 MiB. 4 MiB keeps a few segments per
// chunk for overlap at large sizes and is a single segment for messages of a few MiB.
inline constexpr std::int64_t kDefaultRingSegmentBytes = std::int64_t{4} << 20;

// Largest single point-to-point message: 1 GiB stays far below MPI's int count limit (2^31 - 1
// bytes as MPI_BYTE) while keeping the number of messages of a large transfer small.
inline constexpr std::int64_t kDefaultP2pMaxMessageBytes = std::int64_t{1} << 30;

// `auto`: recursive doubling up to this many bytes, ring above. Crossover measured with
// `microddp bench collectives --backends mpi,ring,rd,naive,auto` at np=2 (docs/allreduce.md,
// "auto"): rd 6.4 us vs ring 11.0 us at 4 KiB, a tie at 16 KiB (19.1 vs 19.7 us), ring ahead at
// 64 KiB (19.5 vs 24.1 us).
inline constexpr std::int64_t kDefaultAutoRdMaxBytes = std::int64_t{16} << 10;

// `auto` above kDefaultAutoRdMaxBytes: the link of the α-β-γ model it chooses by, from this machine
// measured idle (docs/allreduce.md, "How `auto` chooses"): α = 5 µs, the fitted latency of small
// all-reduces (docs/performance.md); β = 0.3 ns/B, the ring's 16 MiB all-reduce at np=2 (3.27 GB/s
// busbw, docs/allreduce.md "Segment size"), an effective β that includes the reduction. So γ = 0: for
// ring, Rabenseifner and the double tree the γ term is exactly half the β term (collective_costs.cpp),
// so γ could only rescale β, never change which one is cheapest.
inline constexpr LinkCosts kDefaultAutoLink{5.0e-6, 0.3e-9, 0.0};

// The hand-rolled broadcast's switch from the binomial tree to the pipelined chain
// (docs/sync_primitives.md, "Broadcast").
inline constexpr std::int64_t kDefaultChainBroadcastMinBytes = std::int64_t{16} << 20;

// PyTorch's default NCCL timeout: far beyond any healthy collective, short enough to end a hung job.
inline constexpr double kDefaultNcclTimeoutS = 600.0;

struct CommConfig {
  std::int64_t ring_segment_bytes = kDefaultRingSegmentBytes;       // MICRODDP_RING_SEGMENT_BYTES
  std::int64_t p2p_max_message_bytes = kDefaultP2pMaxMessageBytes;  // MICRODDP_P2P_MAX_MESSAGE_BYTES
  std::int64_t auto_rd_max_bytes = kDefaultAutoRdMaxBytes;          // MICRODDP_AUTO_RD_MAX_BYTES
  LinkCosts auto_link = kDefaultAutoLink;  // MICRODDP_AUTO_{ALPHA_US,BETA_NS_PER_BYTE,GAMMA_NS_PER_BYTE}
  std::int64_t chain_broadcast_min_bytes = kDefaultChainBroadcastMinBytes;  // MICRODDP_CHAIN_BROADCAST_MIN_BYTES
  double nccl_timeout_s = kDefaultNcclTimeoutS;                     // MICRODDP_NCCL_TIMEOUT_S
  std::vector<int> hier_node_sizes;  // MICRODDP_HIER_NODE_SIZES (empty: MPI_COMM_TYPE_SHARED)
};

using core::EnvLookup;

// Throws core::UsageError naming the variable and its accepted range for a malformed value.
CommConfig parse_comm_config(const EnvLookup& env);

// Node sizes as the override text gives them: empty = no override (the launcher decides); one
// value = every node that size; several = one per node. Throws core::UsageError for anything but
// positive integers separated by commas, naming `what` (the variable).
std::vector<int> parse_node_sizes(std::string_view text, std::string_view what);


}  // namespace microddp::comm
