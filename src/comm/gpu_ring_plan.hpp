// gpu_ring_plan.hpp — the schedule of the GPU ring all-reduce (gpu_ring_communicator.cpp) as pure
// functions, so the CPU unit tests replay it on host arrays (tests/comm/test_nccl_host.cpp).
//
// The buffer is cut into n blocks with even_part (ring_layout.hpp, shared with the CPU ring: lengths
// differ by at most one, empty blocks allowed). Rank r sends only to r+1 and receives only from r-1.
//   reduce-scatter step s = 0..n-2: send block rs_send_block, receive rs_recv_block into scratch and
//     reduce it with the own contribution; after n-1 steps rank r holds the full reduction of block r.
//   all-gather step s = 0..n-2: send ag_send_block, receive ag_recv_block straight into place.
// What r sends at step s is what r+1 receives at step s (same block, so same length on both sides).
// The GPU version does not pipeline segments within a step (one NCCL group + one reduction kernel per
// step, ordered on the communication stream); docs/gpu.md says why that is acceptable here.
#pragma once

#include "comm/ring_layout.hpp"

namespace microddp::comm {

constexpr int rs_send_block(int r, int n, int s) { return ring_mod(static_cast<std::int64_t>(r) - s - 1, n); }
constexpr int rs_recv_block(int r, int n, int s) { return ring_mod(static_cast<std::int64_t>(r) - s - 2, n); }
constexpr int ag_send_block(int r, int n, int s) { return ring_mod(static_cast<std::int64_t>(r) - s, n); }
constexpr int ag_recv_block(int r, int n, int s) { return ring_mod(static_cast<std::int64_t>(r) - s - 1, n); }

}  // namespace microddp::comm
