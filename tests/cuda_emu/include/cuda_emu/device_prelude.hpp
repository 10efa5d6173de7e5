// device_prelude.hpp — what CUDA device code needs to compile as host C++ and run on the emulated
// CUDA device. Force-included (-include) first into each translation unit that compiles kernels in
// the emulated build (cmake: cuda_emu_compile_kernel_sources), never into other code.
// Provides: __shared__, threadIdx/blockIdx/blockDim/gridDim, warpSize, __syncthreads, __syncwarp,
// __shfl_sync/__shfl_up_sync/__shfl_down_sync/__shfl_xor_sync, atomicAdd (the overloads CUDA has
// for int, unsigned int, unsigned long long int, float and double), and MDDP_HOST_LAUNCH, the host
// launcher that kernels/cuda/launch.hpp's MDDP_LAUNCH expands to outside nvcc.
// Contract: kernel bodies compile unchanged. Each CUDA thread of a block runs as a fiber of the
// stream's worker thread (or as a plain call when the kernel never synchronises); a primitive
// called outside a kernel, or with threads missing, fails the launch loudly (see
// docs/cuda_emu.md). Not emulated: dynamic shared memory (extern __shared__), the atomics other than
// atomicAdd (atomicCAS, atomicMax, ...: they do not compile here), atomicAdd on half / bfloat16 /
// vector types, cooperative groups, __device__ globals per device (one copy per process).
#pragma once

#if defined(__CUDACC__)
#error "cuda_emu/device_prelude.hpp is for the emulated build (device code compiled as host C++), not for nvcc"
#endif

// Before cuda_runtime.h: crt/host_defines.h defines __shared__ empty for a host compiler unless it
// is defined already. A function-local static thread_local is one object per OS thread; every CUDA
// thread of a block is a fiber of the same stream worker, and a worker runs one block at a time, so
// that is one array per block in flight, shared by its threads — what __shared__ means.
#define __shared__ static thread_local
// Register/occupancy hints have no meaning here.
#define __launch_bounds__(...)

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <atomic>
#include <memory>
#include <tuple>
#include <type_traits>

#include "cuda_emu/device_api.hpp"

inline constexpr int warpSize = 32;

inline void __syncthreads() { ::cuda_emu::device::sync_threads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)::cuda_emu::device::warp_exchange(::cuda_emu::device::WarpOp::Sync, mask, 0, 0, warpSize);
}

namespace cuda_emu::device {

// CUDA overloads the shuffles for the arithmetic types of at most 8 bytes; a value travels as raw bits.
template <typename T>
T shuffle(WarpOp op, unsigned mask, T var, int arg, int width) {
  static_assert(std::is_arithmetic_v<T> && sizeof(T) <= sizeof(std::uint64_t), "__shfl*_sync of an unsupported type");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  bits = warp_exchange(op, mask, bits, arg, width);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

}  // namespace cuda_emu::device

template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
  return ::cuda_emu::device::shuffle(::cuda_emu::device::WarpOp::ShuffleIndex, mask, var, src_lane, width);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::cuda_emu::device::shuffle(::cuda_emu::device::WarpOp::ShuffleUp, mask, var, static_cast<int>(delta), width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::cuda_emu::device::shuffle(::cuda_emu::device::WarpOp::ShuffleDown, mask, var, static_cast<int>(delta),
                                     width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
  return ::cuda_emu::device::shuffle(::cuda_emu::device::WarpOp::ShuffleXor, mask, var, lane_mask, width);
}

namespace cuda_emu::device {

// One atomic add, atomic with respect to every CUDA thread of every stream worker (kernels of two
// streams run at the same time on two OS threads). Float and double adds round as IEEE adds (to
// nearest); the order in which a grid's atomics land follows the schedule, so a float sum built from
// atomics changes with CUDA_EMU_SCHEDULE, as it changes from run to run on a GPU.
template <typename T>
T atomic_add(T* address, T value) {
  atomic_access(address, sizeof(T), "atomicAdd");
  return std::atomic_ref<T>(*address).fetch_add(value, std::memory_order_relaxed);
}

}  // namespace cuda_emu::device

// Exactly CUDA's overloads (no template): a call nvcc refuses, e.g. atomicAdd on a long* or a
// std::int64_t*, does not compile here either.
inline int atomicAdd(int* address, int val) { return ::cuda_emu::device::atomic_add(address, val); }
inline unsigned int atomicAdd(unsigned int* address, unsigned int val) {
  return ::cuda_emu::device::atomic_add(address, val);
}
inline unsigned long long int atomicAdd(unsigned long long int* address, unsigned long long int val) {
  return ::cuda_emu::device::atomic_add(address, val);
}
inline float atomicAdd(float* address, float val) { return ::cuda_emu::device::atomic_add(address, val); }
inline double atomicAdd(double* address, double val) { return ::cuda_emu::device::atomic_add(address, val); }

namespace cuda_emu::device {

// The kernel `Kernel` (a function pointer constant) with its arguments. The kernel is a template
// argument, so the per-thread loop of run_threads calls it directly (the compiler may inline it).
template <auto Kernel, typename... P>
class BoundKernel final : public KernelBody {
 public:
  explicit BoundKernel(P... args) : args_(args...) {}
  void run_thread() const override { std::apply(Kernel, args_); }
  void run_threads(const uint3* threads, std::size_t count) const override {
    for (std::size_t i = 0; i < count; ++i) {
      threadIdx = threads[i];
      std::apply(Kernel, args_);
    }
  }
  // Its address identifies the kernel (one per instantiation, also across translation units).
  static constexpr char kId = 0;

 private:
  std::tuple<P...> args_;
};

// The kernel's function type, however the constant was deduced (a pointer, or for a dependent
// template-id in a template, GCC may deduce a function reference).
template <auto Kernel>
using KernelSignature = std::remove_pointer_t<std::remove_reference_t<decltype(Kernel)>>;

template <auto Kernel, typename Signature = KernelSignature<Kernel>>
class Launcher;

// Launcher<kernel>(name, grid, block, smem, stream)(args...): the arguments convert to the kernel's
// parameter types as in a <<<...>>> launch.
template <auto Kernel, typename... P>
class Launcher<Kernel, void(P...)> {
 public:
  Launcher(const char* name, dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream)
      : name_(name), grid_(grid), block_(block), shared_bytes_(shared_bytes), stream_(stream) {}

  void operator()(P... args) const {
    PointerArg pointers[sizeof...(P) + 1];  // + 1: no zero-length array for a kernel without parameters
    std::size_t count = 0;
    unsigned index = 0;
    (note_pointer(pointers, count, index++, args), ...);
    const LaunchRequest request{
        &BoundKernel<Kernel, P...>::kId, name_, grid_, block_, shared_bytes_, stream_, pointers, count};
    launch(request, std::make_unique<BoundKernel<Kernel, P...>>(args...));
  }

 private:
  template <typename A>
  static void note_pointer(PointerArg* pointers, std::size_t& count, unsigned index, const A& arg) {
    if constexpr (std::is_pointer_v<A>) pointers[count++] = PointerArg{index, static_cast<const void*>(arg)};
  }

  const char* name_;
  dim3 grid_;
  dim3 block_;
  std::size_t shared_bytes_;
  cudaStream_t stream_;
};

}  // namespace cuda_emu::device

// What kernels/cuda/launch.hpp's MDDP_LAUNCH(kernel, grid, block, smem, stream) becomes here.
#define MDDP_HOST_LAUNCH(kernel, grid, block, smem, stream) \
  ::cuda_emu::device::Launcher<kernel>(#kernel, (grid), (block), (smem), (stream))
