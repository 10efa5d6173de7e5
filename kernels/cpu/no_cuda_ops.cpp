// no_cuda_ops.cpp — make_cuda_ops for builds with MICRODDP_CUDA=OFF (compiled only then; with CUDA
// the real definition lives in microddp_kernels_cuda). Asking for a backend that was not built is
// an error, never a silent fall-back to the CPU.
#include "core/error.hpp"
#include "kernels/ops.hpp"

namespace microddp::kernels {

std::unique_ptr<Ops> make_cuda_ops(int device, bool /*tf32*/) {
  MDDP_CHECK(false, "CUDA ops requested (device " << device
                                                  << ") but microddp was built with MICRODDP_CUDA=OFF; "
                                                     "reconfigure with -DMICRODDP_CUDA=ON on a machine with nvcc");
  return nullptr;  // not reached
}

}  // namespace microddp::kernels
