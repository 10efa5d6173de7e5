// comm_config.hpp — the settings of the communication layer (CommConfig) and the fault-injection
// hooks of the reliability tests (FaultSpec): their defaults, and their parsing from environment
// variables. One definition of every tunable: backends, the factory's backend descriptions and the
// performance model read the values from here.
//
// Contract:
//   * The library never reads the process environment itself: the app (and the test harness) calls
//     parse_comm_config() / parse_fault_spec() once with a lookup function, before MPI starts, and
//     passes the result to the factory. So every value a backend uses is visible at one call site,
//     and a bad value is a core::UsageError (exit code 2) naming the variable, on every rank alike.
//   * Every rank must run with the same CommConfig (the launcher exports the same environment):
//     segment sizes and message limits decide which messages the ranks exchange.
//   * Variables (names and meaning are documented for users; tests set them):
//       MICRODDP_RING_SEGMENT_BYTES     pipeline segment of the ring and the tree broadcast, >= 1
//       MICRODDP_P2P_MAX_MESSAGE_BYTES  largest single MPI message of the hand-rolled backends,
//                                       in [1, INT_MAX]
//       MICRODDP_AUTO_RD_MAX_BYTES      `auto`: recursive doubling up to this many bytes, >= 1
//       MICRODDP_NCCL_TIMEOUT_S         NCCL backends' wait limit in seconds, >= 0 (0 = none);
//                                       empty = the default
//       MICRODDP_FAULT_EXIT             "RANK:SEQ[:CODE]": that rank _Exit(CODE)s (default 3)
//                                       just before collective SEQ (>= 1), like a crash
//       MICRODDP_FAULT_EXTRA_COLLECTIVE "RANK:SEQ": that rank issues one extra empty all_reduce as
//                                       its collective SEQ (>= 1): a silent desync
#pragma once

#include <cstdint>
#include <functional>

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

// PyTorch's default NCCL timeout: far beyond any healthy collective, short enough to end a hung job.
inline constexpr double kDefaultNcclTimeoutS = 600.0;

struct CommConfig {
  std::int64_t ring_segment_bytes = kDefaultRingSegmentBytes;        // MICRODDP_RING_SEGMENT_BYTES
  std::int64_t p2p_max_message_bytes = kDefaultP2pMaxMessageBytes;   // MICRODDP_P2P_MAX_MESSAGE_BYTES
  std::int64_t auto_rd_max_bytes = kDefaultAutoRdMaxBytes;           // MICRODDP_AUTO_RD_MAX_BYTES
  double nccl_timeout_s = kDefaultNcclTimeoutS;                      // MICRODDP_NCCL_TIMEOUT_S
};

// Hidden test hooks (docs/reliability.md). rank -1: off. Only the named rank acts; every rank
// parses the same text, so a malformed value is refused everywhere.
struct FaultSpec {
  int exit_rank = -1;             // MICRODDP_FAULT_EXIT
  std::uint64_t exit_seq = 0;
  int exit_code = 3;
  int extra_rank = -1;            // MICRODDP_FAULT_EXTRA_COLLECTIVE
  std::uint64_t extra_seq = 0;
};

// The value of an environment variable, or nullptr when it is not set (std::getenv's contract).
using EnvLookup = std::function<const char*(const char* name)>;

// Throw core::UsageError naming the variable and its accepted range for a malformed value.
CommConfig parse_comm_config(const EnvLookup& env);
FaultSpec parse_fault_spec(const EnvLookup& env);

}  // namespace microddp::comm
