// host_device.hpp — MDDP_HD marks functions that compile for both the CPU and CUDA devices.
// Under nvcc it expands to __host__ __device__; in plain C++ builds it is empty, so the same
// inline per-element math is exercised by CPU tests and executed by the GPU kernels.
#pragma once

#if defined(__CUDACC__)
#define MDDP_HD __host__ __device__
#define MDDP_HD_INLINE __host__ __device__ __forceinline__
#else
#define MDDP_HD
#define MDDP_HD_INLINE inline
#endif
