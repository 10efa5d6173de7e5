// device_staging_cuda.cpp — device buffers for host-memory backends (see device_staging.hpp).
#include <cuda_runtime.h>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI: MPIX_Query_cuda_support (OMPI_HAVE_MPI_EXT_CUDA)
#endif

#include <cstring>

#include "comm/gpu/device_staging.hpp"
#include "comm/gpu/pinned_host_buffer.hpp"
#include "comm/gpu/staging_plan.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::comm {

namespace {

bool mpi_is_cuda_aware() {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  return MPIX_Query_cuda_support() == 1;  // what the library was built with AND runs with
#else
  return false;  // no way to ask: assume not (staging is always correct)
#endif
}

class CudaDeviceStaging final : public DeviceStaging {
 public:
  explicit CudaDeviceStaging(StagingPolicy policy)
      : pass_through_(policy == StagingPolicy::PassThroughIfCudaAwareMpi && mpi_is_cuda_aware()) {}
  std::string mode() const override { return pass_through_ ? "CUDA-aware MPI" : "pinned-host staging"; }

  void run(const CollectiveCall& call, int rank, int size,
           const std::function<void(const CollectiveCall&)>& host_collective) override {
    select_device(call, rank);
    MDDP_CUDA_CHECK(cudaDeviceSynchronize());
    if (pass_through_ && call.op != ReduceOp::Mean) {
      host_collective(call);
      return;
    }
    const StagingPlan plan = plan_staging(call, rank);
    char* base[2] = {nullptr, nullptr};
    for (int i = 0; i < plan.region_count; ++i) {
      const StagingRegion& r = plan.regions[i];
      base[i] = pinned_[i].ensure(r.bytes);
      if (r.copy_in)
        MDDP_CUDA_CHECK(cudaMemcpy(base[i], r.base, static_cast<std::size_t>(r.bytes), cudaMemcpyDeviceToHost));
    }
    CollectiveCall h = staged_call(call, plan, base, core::Device::Host);
    if (h.op == ReduceOp::Mean) h.op = ReduceOp::Sum;
    host_collective(h);
    if (call.op == ReduceOp::Mean &&
        (call.kind == CollectiveKind::AllReduce || call.kind == CollectiveKind::ReduceScatter) && plan.copy_out) {
      kernels::host_scale(h.recv, 1.0 / static_cast<double>(size));
    }
    if (plan.copy_out) {
      MDDP_CUDA_CHECK(cudaMemcpy(call.recv.data, base[plan.recv.region] + plan.recv.offset_bytes,
                                 static_cast<std::size_t>(call.recv.bytes()), cudaMemcpyHostToDevice));
    }
  }

 private:
  // The communication thread has its own current device: make it the buffers' GPU.
  static void select_device(const CollectiveCall& call, int rank) {
    const core::TensorView* v = nullptr;
    if (collective_uses_send(call, rank) && call.send.count > 0) v = &call.send;
    if (v == nullptr && collective_uses_recv(call, rank) && call.recv.count > 0) v = &call.recv;
    if (v == nullptr) return;
    cudaPointerAttributes a{};
    MDDP_CUDA_CHECK(cudaPointerGetAttributes(&a, v->data));
    MDDP_CHECK(a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged,
               collective_name(call.kind)
                   << ": buffer marked Device::Cuda is not device memory (type " << static_cast<int>(a.type) << ")");
    MDDP_CUDA_CHECK(cudaSetDevice(a.device));
  }

  bool pass_through_;  // device pointers go to the host collective (CUDA-aware MPI, and the policy allows it)
  PinnedHostBuffer pinned_[2];
};

}  // namespace

std::unique_ptr<DeviceStaging> make_device_staging(StagingPolicy policy) {
  return std::make_unique<CudaDeviceStaging>(policy);
}

}  // namespace microddp::comm
