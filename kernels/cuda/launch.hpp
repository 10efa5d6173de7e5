// launch.hpp — MDDP_LAUNCH, the one way microddp launches a CUDA kernel.
// Contract: MDDP_LAUNCH(kernel, grid, block, smem, stream)(args...) means exactly
// kernel<<<grid, block, smem, stream>>>(args...). Under nvcc (__CUDACC__) it is that launch. Compiled
// as host C++ it expands to MDDP_HOST_LAUNCH(kernel, grid, block, smem, stream), a host launcher the
// build must provide (e.g. through a header it force-includes into kernel translation units) with
// the same meaning: asynchronous on `stream`, errors reported through cudaGetLastError(). Without
// one the translation unit does not compile.
// `kernel` is a named __global__ function or template instantiation; a template argument list with
// a comma needs parentheses around it (it is a macro argument).
#pragma once

#if defined(__CUDACC__)
#define MDDP_LAUNCH(kernel, grid, block, smem, stream) kernel<<<(grid), (block), (smem), (stream)>>>
#elif defined(MDDP_HOST_LAUNCH)
#define MDDP_LAUNCH(kernel, grid, block, smem, stream) MDDP_HOST_LAUNCH(kernel, grid, block, smem, stream)
#else
#error \
    "kernels/cuda/launch.hpp: compiled as host C++ without a host kernel launcher (MDDP_HOST_LAUNCH); kernel sources must be compiled by nvcc, or by a build that provides the launcher"
#endif
