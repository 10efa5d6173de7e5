// gpu_comm_kernels.hpp — the device arithmetic the GPU communication backends need beyond NCCL:
// element-wise reduction for the GPU ring and the 1/n scaling of Mean, for every comm dtype.
// Plain C++ (no CUDA headers), like kernels/cuda_kernels.hpp, whose stream forward declaration it uses.
// Contract: pointers are device memory of the current device; enqueued on `stream`, launch checked,
// no synchronisation. f32 goes through the kernels library (gpu::reduce / gpu::scale, the same
// per-element math as CPU and training); f64 and the integer types through the templated kernels of
// gpu_comm_kernels.cu, which use the same reduce_pair (kernels/elementwise.hpp).
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "core/reduce_op.hpp"
#include "kernels/cuda_kernels.hpp"

namespace microddp::comm::gpu {

// dst(n) = reduce_pair(op, a, b); dst may alias a or b; Mean combines like Sum.
void device_reduce(void* dst, const void* a, const void* b, std::int64_t n, core::DType dtype, core::ReduceOp op,
                   cudaStream_t stream);
// x(n) *= alpha in the element's precision (as kernels::host_scale): floating-point dtypes only.
void device_scale(void* x, std::int64_t n, core::DType dtype, double alpha, cudaStream_t stream);

}  // namespace microddp::comm::gpu
