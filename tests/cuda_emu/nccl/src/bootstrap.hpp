// bootstrap.hpp — how ranks find each other, as real NCCL does it, over TCP and independent of MPI:
//
//   ncclGetUniqueId   opens a listener on this host's selected address (net_interface.hpp), starts the
//                     bootstrap root thread on it, and encodes address + random nonce into the id.
//   ncclCommInitRank  (collective over the nranks callers) opens this rank's data listener, sends the
//                     root a Hello (bootstrap_protocol.hpp: rank, nranks, listener, host, GPU UUID),
//                     receives every rank's PeerInfo, refuses two ranks on one GPU, then builds a full
//                     mesh of TCP connections (rank r connects to every rank below it and accepts the
//                     ones above) and returns the Comm.
//
// Timeouts (NCCL_EMU_BOOTSTRAP_TIMEOUT_S, default 120 s): the root gives up when not every rank has
// joined within the timeout of the first one (or of its creation, if none came), tells the ranks that
// did join which ones are missing (ncclSystemError), and ends its thread; a rank gives up connecting,
// waiting for the root's reply (timeout + kReplyGraceS, so the root's message arrives first) or building
// the mesh after the timeout. A missing rank is an error, never a hang.
// Usage errors (ncclInvalidUsage): ranks disagreeing on nranks, one rank number used twice, two ranks on
// one GPU ("Duplicate GPU detected: rank i and rank j both on ..."); every rank gets the same verdict.
#pragma once

#include <nccl.h>

#include <chrono>
#include <memory>

#include "comm.hpp"
#include "status.hpp"

namespace cuda_emu::nccl {

// NCCL_EMU_BOOTSTRAP_TIMEOUT_S (seconds, > 0), default 120; a malformed value is ncclInvalidUsage.
Status bootstrap_timeout(std::chrono::milliseconds& out);

Status start_bootstrap_root(ncclUniqueId& id);

// `device`: the calling thread's current device (its UUID identifies the GPU).
Status bootstrap_rank(const ncclUniqueId& id, int nranks, int rank, int device, std::shared_ptr<Comm>& out);

}  // namespace cuda_emu::nccl
