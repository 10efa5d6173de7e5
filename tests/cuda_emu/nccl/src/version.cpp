// version.cpp — NCCL_EMU_VERSION (version.hpp).
#include "version.hpp"

#include <nccl.h>

#include <cstdlib>

namespace cuda_emu::nccl {

Status emulated_version(int& out) {
  out = NCCL_VERSION_CODE;
  const char* v = std::getenv("NCCL_EMU_VERSION");
  if (v == nullptr || *v == '\0') return success();
  char* end = nullptr;
  const long code = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || code < 20000 || code > NCCL_VERSION_CODE) {
    return fail(ncclInvalidUsage, cat("NCCL_EMU_VERSION='", v, "' is not an NCCL version code in [20000, ",
                                      NCCL_VERSION_CODE, "] (e.g. 20905 for 2.9.5)"));
  }
  out = static_cast<int>(code);
  return success();
}

}  // namespace cuda_emu::nccl
