// cuda_check.hpp — the checked-call macros for the CUDA runtime and cuBLAS.
// cuBLAS's error names come through cublas_library() (cuBLAS is loaded on first use).
// Contract: MDDP_CUDA_CHECK(expr) / MDDP_CUBLAS_CHECK(expr) evaluate expr once; on failure they
// throw core::Error carrying the library's error name and string, the expression, file:line and
// the rank (added by core::throw_error). Only for translation units that see the CUDA headers.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <sstream>

#include "core/error.hpp"
#include "kernels/cuda/cublas_library.hpp"

#define MDDP_CUDA_CHECK(expr)                                                        \
  do {                                                                               \
    const cudaError_t mddp_cuda_err_ = (expr);                                       \
    if (mddp_cuda_err_ != cudaSuccess) {                                             \
      std::ostringstream mddp_cuda_os_;                                              \
      mddp_cuda_os_ << "CUDA error " << cudaGetErrorName(mddp_cuda_err_) << ": "     \
                    << cudaGetErrorString(mddp_cuda_err_);                           \
      ::microddp::core::throw_error(mddp_cuda_os_.str(), #expr, __FILE__, __LINE__); \
    }                                                                                \
  } while (0)

#define MDDP_CUBLAS_CHECK(expr)                                                          \
  do {                                                                                   \
    const cublasStatus_t mddp_cublas_st_ = (expr);                                       \
    if (mddp_cublas_st_ != CUBLAS_STATUS_SUCCESS) {                                      \
      std::ostringstream mddp_cublas_os_;                                                \
      mddp_cublas_os_ << "cuBLAS error " << ::microddp::kernels::cublas_library().status_name(mddp_cublas_st_) << ": " \
                      << ::microddp::kernels::cublas_library().status_string(mddp_cublas_st_); \
      ::microddp::core::throw_error(mddp_cublas_os_.str(), #expr, __FILE__, __LINE__);   \
    }                                                                                    \
  } while (0)

// After a <<<...>>> launch: reports bad launch configurations at once (asynchronous faults inside
// the kernel surface at the next synchronising call, which is checked too).
#define MDDP_CUDA_CHECK_LAUNCH() MDDP_CUDA_CHECK(cudaGetLastError())
