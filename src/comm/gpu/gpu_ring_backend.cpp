// gpu_ring_backend.cpp — the `nccl-ring` backend: NcclBackend with the all-reduce replaced by our own
// ring on device buffers, following the ring's one schedule (ring_schedule.hpp, the CPU ring's too):
// NCCL point-to-point (ncclSend/ncclRecv) is only the transport, the reduction is our kernel
// (comm/gpu/gpu_comm_kernels.hpp; f32: kernels::gpu::reduce). Every other collective is NCCL's
// (nccl_backend.cpp). It exists to compare our algorithm with NCCL's on the same transport, and to
// teach; `nccl` is the one to train with.
//
// Per step: one NCCL group {send block to rank+1, receive block from rank-1 into scratch}, then (in
// the reduce-scatter phase) one reduction kernel, all on the communication stream, so stream order
// does the synchronisation: the kernel of step s reads the scratch after its receive landed, and the
// receive of step s+1 overwrites the scratch only after that kernel ran. One scratch block suffices.
// Unlike the CPU ring there is no segment pipelining within a step (docs/gpu.md says why that is
// acceptable here). Identical bits on all ranks: each block is reduced along one chain and then only
// copied.
#include <cuda_runtime.h>
#include <nccl.h>

#include "comm/gpu/gpu_comm_kernels.hpp"
#include "comm/gpu/nccl_backend.hpp"
#include "comm/gpu/nccl_check.hpp"
#include "comm/gpu/nccl_setup.hpp"
#include "comm/algorithms/ring_schedule.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device.hpp"

namespace microddp::comm {

namespace {

class GpuRingBackend final : public NcclBackend {
 public:
  using NcclBackend::NcclBackend;
  std::string_view name() const override { return "nccl-ring"; }

 protected:
  void enqueue_all_reduce(const core::TensorView& send, const core::TensorView& recv, ReduceOp op) override {
    const std::int64_t count = recv.count;
    const int n = size(), r = rank();
    cudaStream_t stream = comm_stream_handle();
    if (n == 1) {
      if (send.data != recv.data) {
        MDDP_CUDA_CHECK(cudaMemcpyAsync(recv.data, send.data, static_cast<std::size_t>(recv.bytes()),
                                        cudaMemcpyDeviceToDevice, stream));
      }
      return;
    }
    const ncclDataType_t t = nccl_dtype(recv.dtype);
    const std::int64_t es = static_cast<std::int64_t>(core::dtype_bytes(recv.dtype));
    const int right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
    auto chunk = [&](const core::TensorView& v, int b) {
      const IndexRange c = even_part(count, n, b);
      return v.slice(c.begin, c.count);
    };
    void* tmp = device_scratch(even_part(count, n, 0).count * es);  // block 0 is a longest one
    ncclComm_t comm = nccl_comm();
    // One step: send `out` to the right, receive `in_count` elements from the left into `in`.
    auto exchange = [&](const core::TensorView& out, void* in, std::int64_t in_count) {
      NcclGroup group;
      if (out.count > 0)
        MDDP_NCCL_CHECK(ncclSend(out.data, static_cast<std::size_t>(out.count), t, right, comm, stream));
      if (in_count > 0) MDDP_NCCL_CHECK(ncclRecv(in, static_cast<std::size_t>(in_count), t, left, comm, stream));
      group.end();
    };
    for (int s = 0; s <= n - 2; ++s) {
      // Step 0 sends the own input; later steps forward the partial sum reduced at the step before.
      const int sb = rs_send_block(r, n, s), rb = rs_recv_block(r, n, s);
      const core::TensorView out = s == 0 ? chunk(send, sb) : chunk(recv, sb);
      const core::TensorView mine = chunk(send, rb), acc = chunk(recv, rb);
      exchange(out, tmp, acc.count);
      gpu::device_reduce(acc.data, mine.data, tmp, acc.count, recv.dtype, op, stream);
    }
    for (int s = 0; s <= n - 2; ++s) {
      const core::TensorView in = chunk(recv, ag_recv_block(r, n, s));
      exchange(chunk(recv, ag_send_block(r, n, s)), in.data, in.count);
    }
  }
};

}  // namespace

std::unique_ptr<StreamBackend> make_gpu_ring_backend(const MpiRuntime& runtime, const CommConfig& config) {
  return std::make_unique<GpuRingBackend>(runtime.world(), nccl_rank_device(runtime), config.nccl_timeout_s);
}

}  // namespace microddp::comm
