// ring_schedule.hpp — the one schedule of the ring: which block every rank sends and receives at
// every step of reduce-scatter and all-gather. Used by the CPU ring (ring_collectives.cpp, which
// pipelines each step in segments) and the GPU ring (gpu_ring_backend.cpp, one NCCL group per step);
// tested once as pure functions (tests/comm/algorithms/test_ring_layout.cpp) and replayed on host arrays
// (tests/comm/gpu/test_nccl_host.cpp).
//
// The buffer is cut into n blocks with even_part (ring_layout.hpp: lengths differ by at most one,
// empty blocks allowed). Rank r sends only to r+1 and receives only from r-1.
//   reduce-scatter, step s = 0..n-2: send block rs_send_block, receive block rs_recv_block and reduce
//     it with the own contribution; the block received at step s is the one sent at step s+1, and
//     after n-1 steps rank r holds the full reduction of block r.
//   all-gather, step s = 0..n-2: send ag_send_block (own block r at step 0, then the block received
//     at the step before), receive ag_recv_block straight into place.
// What r sends at step s is what r+1 receives at step s (same block, so same length on both sides).
#pragma once

#include <cstdint>

#include "comm/algorithms/ring_layout.hpp"

namespace microddp::comm {

constexpr int rs_send_block(int r, int n, int s) { return ring_mod(static_cast<std::int64_t>(r) - s - 1, n); }
constexpr int rs_recv_block(int r, int n, int s) { return ring_mod(static_cast<std::int64_t>(r) - s - 2, n); }
constexpr int ag_send_block(int r, int n, int s) { return ring_mod(static_cast<std::int64_t>(r) - s, n); }
constexpr int ag_recv_block(int r, int n, int s) { return ring_mod(static_cast<std::int64_t>(r) - s - 1, n); }

}  // namespace microddp::comm
