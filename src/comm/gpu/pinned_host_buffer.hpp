// pinned_host_buffer.hpp — a growable page-locked host buffer for staging device data through host
// memory (device_staging_cuda.cpp, nccl_backend.cpp). CUDA builds only.
// Contract: ensure(bytes) returns a buffer of at least `bytes` bytes, reallocating (contents lost)
// only when it must grow, so a steady state allocates nothing; portable (usable from every device
// context of the process). Freed by the destructor; errors there are ignored (the process may be
// tearing the CUDA context down).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_check.hpp"

namespace microddp::comm {

class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  ~PinnedHostBuffer() {
    if (ptr_ != nullptr) (void)cudaFreeHost(ptr_);
  }
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;

  char* ensure(std::int64_t want) {
    if (want > bytes_) {
      if (ptr_ != nullptr) MDDP_CUDA_CHECK(cudaFreeHost(ptr_));
      ptr_ = nullptr;
      bytes_ = 0;
      void* p = nullptr;
      MDDP_CUDA_CHECK(cudaHostAlloc(&p, static_cast<std::size_t>(want), cudaHostAllocPortable));
      ptr_ = static_cast<char*>(p);
      bytes_ = want;
    }
    return ptr_;
  }

 private:
  char* ptr_ = nullptr;
  std::int64_t bytes_ = 0;
};

}  // namespace microddp::comm
