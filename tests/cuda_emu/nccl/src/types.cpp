// types.cpp — data type sizes and names (types.hpp).
#include "types.hpp"

namespace cuda_emu::nccl {

std::size_t dtype_bytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;  // fp8 and out-of-range values
  }
}

const char* dtype_name(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "float16";
    case ncclBfloat16:
      return "bfloat16";
    case ncclFloat32:
      return "float32";
    case ncclFloat64:
      return "float64";
    case ncclFloat8e4m3:
      return "float8e4m3";
    case ncclFloat8e5m2:
      return "float8e5m2";
    default:
      return "unknown-dtype";
  }
}

bool op_supported(ncclRedOp_t op) { return op >= ncclSum && op <= ncclAvg; }

const char* op_name(ncclRedOp_t op) {
  switch (op) {
    case ncclSum:
      return "sum";
    case ncclProd:
      return "prod";
    case ncclMax:
      return "max";
    case ncclMin:
      return "min";
    case ncclAvg:
      return "avg";
    default:
      return "custom-op";
  }
}

}  // namespace cuda_emu::nccl
