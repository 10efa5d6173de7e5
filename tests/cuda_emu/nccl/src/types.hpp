// types.hpp — the NCCL data types and reduction operations the emulator supports, with their sizes and
// names (for messages).
//
// Contract: supported data types are Int8, Uint8, Int32, Uint32, Int64, Uint64, Float16, Bfloat16,
// Float32 and Float64 (not the fp8 types); operations are Sum, Prod, Max, Min and Avg (no custom
// ncclRedOpCreatePreMulSum operations). dtype_bytes() is 0 for anything unsupported.
#pragma once

#include <nccl.h>

#include <cstddef>

namespace cuda_emu::nccl {

std::size_t dtype_bytes(ncclDataType_t t);
const char* dtype_name(ncclDataType_t t);
bool op_supported(ncclRedOp_t op);
const char* op_name(ncclRedOp_t op);

}  // namespace cuda_emu::nccl
