// version.hpp — the NCCL version the emulated library reports, and what depends on it.
//
// Contract: emulated_version() is NCCL_EMU_VERSION when set (NCCL's version code, major * 10000 +
// minor * 100 + patch, from 20000 up to the header's NCCL_VERSION_CODE), else the header's
// NCCL_VERSION_CODE; a malformed value is ncclInvalidUsage naming the variable (a misspelt setting
// must not quietly test something else). ncclGetVersion answers it; the wire format and the unique
// id keep the header's code (every rank runs this one library).
// Versions before kFirstCapturableVersion (2.9.6, the first NCCL release whose collectives can be
// captured into CUDA graphs) refuse a call on a capturing stream (ncclInvalidUsage), so a program
// that captures without checking the version fails here as it would on such a cluster.
#pragma once

#include "status.hpp"

namespace cuda_emu::nccl {

inline constexpr int kFirstCapturableVersion = 20906;

Status emulated_version(int& out);

}  // namespace cuda_emu::nccl
