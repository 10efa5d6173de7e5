// staging_plan.hpp — how a collective's buffers are mirrored in staging memory, when a backend can
// only move memory of the other kind (the NCCL backends stage host buffers through device memory;
// the mpi backend stages device buffers through pinned host memory). Pure arithmetic, unit-tested on
// the CPU (tests/comm/gpu/test_nccl_host.cpp).
//
// Contract of plan_staging(call, rank):
//   * Only the buffers the collective uses on this rank are staged (types.hpp conventions: a
//     non-root's scatter send and gather recv are ignored; count-0 buffers are never touched).
//   * If send and recv overlap (the in-place variants), they are staged as ONE region covering both,
//     at the same relative offsets, so the staged call is in place exactly when the original was.
//   * copy_in: the region holds input (send, or the broadcast buffer) and is copied to staging before
//     the collective; only recv's bytes are copied back (copy_out), never the rest of a region.
#pragma once

#include <cstdint>

#include "comm/types.hpp"

namespace microddp::comm {

struct StagingRegion {
  char* base = nullptr;  // original memory
  std::int64_t bytes = 0;
  bool copy_in = false;
};

struct StagedBuffer {
  int region = -1;  // -1: not used by this collective on this rank
  std::int64_t offset_bytes = 0;
};

struct StagingPlan {
  StagingRegion regions[2];
  int region_count = 0;
  StagedBuffer send, recv;
  bool copy_out = false;  // recv's bytes are copied back after the collective
};

StagingPlan plan_staging(const CollectiveCall& call, int rank);

// Whether the collective reads call.send / touches call.recv on this rank (types.hpp conventions),
// regardless of counts.
bool collective_uses_send(const CollectiveCall& call, int rank);
bool collective_uses_recv(const CollectiveCall& call, int rank);

// The staged call: buffers that the plan uses point into staging (region i at stage_base[i]) and carry
// `staged_device`; unused buffers are passed through unchanged.
CollectiveCall staged_call(const CollectiveCall& call, const StagingPlan& plan, char* const stage_base[2],
                           core::Device staged_device);

}  // namespace microddp::comm
