// nccl_check.hpp — MDDP_NCCL_CHECK(expr): evaluates expr once; unless it returns ncclSuccess, throws
// core::Error carrying NCCL's error string, NCCL's last-error detail (ncclGetLastError), the
// expression, file:line and the rank (core::throw_error). Only for translation units that see nccl.h.
// Also the small NCCL helpers both NCCL backends use: nccl_dtype() and NcclGroup.
#pragma once

#include <nccl.h>

#include <string>

#include "core/dtype.hpp"
#include "core/error.hpp"

#define MDDP_NCCL_CHECK(expr)                                                                                     \
  do {                                                                                                            \
    const ncclResult_t mddp_nccl_rc_ = (expr);                                                                    \
    if (mddp_nccl_rc_ != ncclSuccess) {                                                                           \
      const char* mddp_nccl_last_ = ncclGetLastError(nullptr);                                                    \
      ::microddp::core::throw_error(                                                                              \
          std::string("NCCL error: ") + ncclGetErrorString(mddp_nccl_rc_) +                                       \
              (mddp_nccl_last_ != nullptr && *mddp_nccl_last_ != '\0' ? std::string(" (") + mddp_nccl_last_ + ")" \
                                                                      : std::string()),                           \
          #expr, __FILE__, __LINE__);                                                                             \
    }                                                                                                             \
  } while (0)

namespace microddp::comm {

inline ncclDataType_t nccl_dtype(core::DType t) {
  switch (t) {
    case core::DType::F32:
      return ncclFloat32;
    case core::DType::F64:
      return ncclFloat64;
    case core::DType::I32:
      return ncclInt32;
    case core::DType::I64:
      return ncclInt64;
    case core::DType::F16:
      return ncclFloat16;  // NCCL's native 16-bit reductions
    case core::DType::BF16:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
      return ncclBfloat16;
#else
      MDDP_CHECK(false, "nccl: this build's NCCL (" << NCCL_MAJOR << "." << NCCL_MINOR
                                                    << ") has no bfloat16; NCCL 2.10 or later has");
#endif
  }
  MDDP_CHECK(false, "nccl: unknown dtype " << static_cast<int>(t));
  return ncclFloat32;
}

// ncclGroupStart/End. The destructor closes a group left open by an exception: the communicator is
// aborted in that case anyway, but NCCL's thread-local group depth must not stay raised.
class NcclGroup {
 public:
  NcclGroup() { MDDP_NCCL_CHECK(ncclGroupStart()); }
  ~NcclGroup() {
    if (!ended_) (void)ncclGroupEnd();
  }
  void end() {
    ended_ = true;
    MDDP_NCCL_CHECK(ncclGroupEnd());
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

 private:
  bool ended_ = false;
};

}  // namespace microddp::comm
