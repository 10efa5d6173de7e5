// gpu_comm_kernels.cu — see gpu_comm_kernels.hpp. Launchers of the kernels in gpu_comm_kernels.cuh
// (grid-stride loops) with the kernels library's launch geometry (kernels/launch_geometry.hpp), so
// any int64 count works and a count of 0 launches nothing.
#include "comm/gpu/gpu_comm_kernels.hpp"

#include "comm/gpu/gpu_comm_kernels.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launch.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/launch_geometry.hpp"

namespace microddp::comm::gpu {

namespace {

template <typename T>
void launch_reduce(void* dst, const void* a, const void* b, std::int64_t n, core::ReduceOp op, cudaStream_t stream) {
  const kernels::LaunchGeometry g = kernels::grid_stride_geometry(n);
  if (g.empty()) return;
  MDDP_LAUNCH(reduce_kernel<T>, g.blocks, g.threads, 0, stream)
  (static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n, op);
  MDDP_CUDA_CHECK_LAUNCH();
}

}  // namespace

void device_reduce(void* dst, const void* a, const void* b, std::int64_t n, core::DType dtype, core::ReduceOp op,
                   cudaStream_t stream) {
  MDDP_CHECK(n >= 0, "device_reduce: negative count " << n);
  if (n == 0) return;
  MDDP_CHECK(dst != nullptr && a != nullptr && b != nullptr, "device_reduce: null pointer with count " << n);
  switch (dtype) {
    case core::DType::F32:
      kernels::gpu::reduce(static_cast<float*>(dst), static_cast<const float*>(a), static_cast<const float*>(b), n, op,
                           stream);
      return;
    case core::DType::F64:
      launch_reduce<double>(dst, a, b, n, op, stream);
      return;
    case core::DType::I32:
      launch_reduce<std::int32_t>(dst, a, b, n, op, stream);
      return;
    case core::DType::I64:
      launch_reduce<std::int64_t>(dst, a, b, n, op, stream);
      return;
    case core::DType::F16:
    case core::DType::BF16:
      kernels::gpu::reduce_wire16(dtype == core::DType::F16 ? kernels::Wire16::F16 : kernels::Wire16::BF16,
                                  static_cast<std::uint16_t*>(dst), static_cast<const std::uint16_t*>(a),
                                  static_cast<const std::uint16_t*>(b), n, op, stream);
      return;
  }
  MDDP_CHECK(false, "device_reduce: unknown dtype");
}

void device_scale(void* x, std::int64_t n, core::DType dtype, double alpha, cudaStream_t stream) {
  MDDP_CHECK(n >= 0, "device_scale: negative count " << n);
  if (n == 0) return;
  MDDP_CHECK(x != nullptr, "device_scale: null pointer with count " << n);
  switch (dtype) {
    case core::DType::F32:
      kernels::gpu::scale(static_cast<float*>(x), static_cast<float>(alpha), n, stream);
      return;
    case core::DType::F64: {
      const kernels::LaunchGeometry g = kernels::grid_stride_geometry(n);
      MDDP_LAUNCH(scale_f64_kernel, g.blocks, g.threads, 0, stream)(static_cast<double*>(x), alpha, n);
      MDDP_CUDA_CHECK_LAUNCH();
      return;
    }
    default:
      MDDP_CHECK(false, "device_scale: " << core::dtype_name(dtype) << " is not a floating-point dtype");
  }
}

}  // namespace microddp::comm::gpu
